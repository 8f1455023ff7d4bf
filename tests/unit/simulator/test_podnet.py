"""Pod addresses, interface names, ownership and the `ip` commands that wire a pod (pure)."""

from __future__ import annotations

import ipaddress
import itertools

import pytest

from localcluster.simulator.podnet import (
    GATEWAY,
    LINK_NAME_MAX,
    POD_RANGE,
    POOL_SIZE,
    HostLink,
    HostRoute,
    Owner,
    blackhole_command,
    candidate_addresses,
    claim_command,
    create_link_command,
    exists_error,
    forwarding_switch,
    gone_error,
    host_link_batch,
    is_real_pod_address,
    link_name,
    nth_address,
    owner_alias,
    parse_links,
    parse_owner,
    parse_routes,
    pod_batch,
    process_start,
    simulated_pod_ip,
    stale_links,
    taken_addresses,
)

UIDS = [f"0c6f1a2e-{n:04d}-4e0b-9a51-{n:012d}" for n in range(300)]


@pytest.mark.parametrize(
    ("index", "address"),
    [
        (0, "10.244.1.1"),
        (253, "10.244.1.254"),
        (254, "10.244.2.1"),
        (POOL_SIZE - 1, "10.244.127.254"),
    ],
)
def test_the_pool_runs_from_block_1_to_127_without_network_or_broadcast_numbers(
    index: int, address: str
) -> None:
    assert nth_address(index) == address
    assert is_real_pod_address(address)


@pytest.mark.parametrize("index", [-1, POOL_SIZE])
def test_an_index_outside_the_pool_is_refused(index: int) -> None:
    with pytest.raises(ValueError, match="outside the pool"):
        nth_address(index)


@pytest.mark.parametrize(
    "address",
    [
        str(GATEWAY),
        "10.244.0.7",
        "10.244.128.1",
        "10.244.5.0",
        "10.244.5.255",
        "10.245.1.1",
        "127.0.0.1",
        "default",
        "",
    ],
)
def test_addresses_outside_the_real_pool(address: str) -> None:
    assert not is_real_pod_address(address)


def test_the_first_candidate_is_stable_per_uid_and_differs_between_uids() -> None:
    first = [next(candidate_addresses(uid)) for uid in UIDS]
    assert first == [next(candidate_addresses(uid)) for uid in UIDS]
    assert len(set(first)) > 290  # spread over 32k addresses: few uids share a start


def test_candidates_skip_taken_addresses_and_a_released_one_comes_back() -> None:
    uid = UIDS[0]
    own = next(candidate_addresses(uid))
    others = list(itertools.islice(candidate_addresses(uid, taken={own}), 2))
    assert own not in others
    assert others[0] == list(itertools.islice(candidate_addresses(uid), 2))[1]
    assert next(candidate_addresses(uid, taken=set())) == own  # released: the pod's own again


def test_candidates_wrap_around_and_end_when_the_pool_is_full() -> None:
    every = list(candidate_addresses(UIDS[1]))
    assert len(every) == len(set(every)) == POOL_SIZE
    assert all(is_real_pod_address(a) for a in every)
    assert list(candidate_addresses(UIDS[1], taken=every[:-1])) == every[-1:]
    assert list(candidate_addresses(UIDS[1], taken=every)) == []


def test_simulated_addresses_are_made_up_in_the_upper_half_away_from_real_pods() -> None:
    for uid in UIDS:
        address = simulated_pod_ip(uid)
        assert ipaddress.IPv4Address(address) in ipaddress.IPv4Network("10.244.128.0/17")
        assert ipaddress.IPv4Address(address) in POD_RANGE
        assert not is_real_pod_address(address)
        assert address.split(".")[3] not in ("0", "255")
    assert simulated_pod_ip(UIDS[0]) == simulated_pod_ip(UIDS[0])


def test_link_names_fit_the_kernel_and_carry_the_prefix() -> None:
    names = {link_name(uid, attempt) for uid in UIDS for attempt in range(3)}
    assert len(names) == len(UIDS) * 3
    assert all(len(n) == LINK_NAME_MAX and n.startswith("vcj") and n.isalnum() for n in names)
    assert link_name(UIDS[0]) == link_name(UIDS[0], 0)


@pytest.mark.parametrize(
    ("alias", "owner"),
    [
        ("vcjob:pid=4242:start=987654", Owner(4242, 987654)),
        ("vcjob:pid=1:start=0", Owner(1, 0)),
        ("", None),
        ("vcjob:pid=x:start=1", None),
        ("docker0 bridge", None),
        ("vcjob:pid=1:start=2 extra", None),
    ],
)
def test_owner_alias_round_trip(alias: str, owner: Owner | None) -> None:
    assert parse_owner(alias) == owner
    if owner is not None:
        assert owner_alias(owner) == alias


@pytest.mark.parametrize(
    ("stat", "start"),
    [
        (
            "7509 (cat) R 7490 7490 29931 0 -1 4194304 102 0 0 0 0 0 0 0 20 0 1 0 154652 "
            "3133440 406 18446744073709551615",
            154652,
        ),
        ("77 (a) b (c) R 1 77 77 0 -1 0 " + "9 " * 12 + "42 1 2", 42),
    ],
)
def test_process_start_counts_fields_after_the_command_name(stat: str, start: int) -> None:
    assert process_start(stat) == start


def test_stale_links_are_vcjob_interfaces_whose_agent_is_gone_or_unnamed() -> None:
    alive = {Owner(10, 100)}
    links = [
        HostLink("vcjaaaaaaaaaaaa", owner_alias(Owner(10, 100))),  # live agent
        HostLink("vcjbbbbbbbbbbbb", owner_alias(Owner(10, 99))),  # pid reused since
        HostLink("vcjcccccccccccc", owner_alias(Owner(11, 100))),  # agent gone
        HostLink("vcjdddddddddddd", ""),  # no owner: never left so by a live agent
        HostLink("eth0", ""),
        HostLink("veth12", owner_alias(Owner(11, 100))),
    ]
    assert stale_links(links, alive.__contains__) == [
        "vcjbbbbbbbbbbbb",
        "vcjcccccccccccc",
        "vcjdddddddddddd",
    ]


def test_links_and_routes_parse_from_ip_json() -> None:
    links = parse_links(
        '[{"ifindex":1,"ifname":"lo","flags":["LOOPBACK"]},'
        '{"ifindex":9,"link_index":2,"ifname":"vcj0123456789ab","ifalias":"vcjob:pid=5:start=6"}]'
    )
    assert links == [HostLink("lo", ""), HostLink("vcj0123456789ab", "vcjob:pid=5:start=6")]
    routes = parse_routes(
        '[{"dst":"default","gateway":"192.0.2.1","dev":"eth0","flags":[]},'
        '{"type":"blackhole","dst":"10.244.0.0/16","protocol":"118","flags":[]},'
        '{"dst":"10.244.5.5","dev":"vcj0123456789ab","scope":"link","protocol":"118",'
        '"prefsrc":"10.244.0.1","flags":[]},'
        '{"dst":"10.244.6.6/32","dev":"cni0","flags":[]},'
        '{"dst":"10.244.200.1","dev":"cni0","flags":[]}]'
    )
    assert routes[1] == HostRoute("10.244.0.0/16", "blackhole", "", "118")
    assert routes[2] == HostRoute("10.244.5.5", "unicast", "vcj0123456789ab", "118")
    # Anyone's host route takes the address, not only vcjob's; other ranges do not count.
    assert taken_addresses(routes) == {"10.244.5.5", "10.244.6.6"}
    assert parse_links("") == [] and parse_routes("") == []


def test_commands_wire_a_pod_the_way_the_network_model_says() -> None:
    assert create_link_command("vcj0123456789ab", 321) == [
        "ip", "link", "add", "vcj0123456789ab", "type", "veth",
        "peer", "name", "eth0", "netns", "321",
    ]  # fmt: skip
    assert host_link_batch("vcj0123456789ab", Owner(5, 6)).splitlines() == [
        "link set dev vcj0123456789ab alias vcjob:pid=5:start=6",
        "address add 10.244.0.1/32 dev vcj0123456789ab",
        "link set dev vcj0123456789ab up",
    ]
    assert claim_command("vcj0123456789ab", "10.244.3.4") == [
        "ip", "route", "add", "10.244.3.4/32", "dev", "vcj0123456789ab",
        "src", "10.244.0.1", "proto", "118",
    ]  # fmt: skip
    assert pod_batch("10.244.3.4").splitlines() == [
        "address add 10.244.3.4/32 dev eth0",
        "link set dev eth0 up",
        "route add 10.244.0.1/32 dev eth0 scope link",
        "route add default via 10.244.0.1 dev eth0 onlink",
    ]
    assert forwarding_switch("vcjx") == "/proc/sys/net/ipv4/conf/vcjx/forwarding"


@pytest.mark.parametrize("verb", ["add", "del"])
def test_blackholes_carry_vcjobs_protocol_so_deleting_touches_no_other_route(verb: str) -> None:
    assert blackhole_command(verb, "10.0.0.0/24") == [
        "ip", "route", verb, "blackhole", "10.0.0.0/24", "proto", "118",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("stderr", "exists", "gone"),
    [
        ("RTNETLINK answers: File exists\n", True, False),
        ('Cannot find device "vcj0123456789ab"\n', False, True),
        ("RTNETLINK answers: No such process\n", False, True),
        ("Error: Device for nexthop is not up.\n", False, False),
    ],
)
def test_ip_errors_that_mean_taken_or_already_gone(stderr: str, exists: bool, gone: bool) -> None:
    assert exists_error(stderr) is exists
    assert gone_error(stderr) is gone
