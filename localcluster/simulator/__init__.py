"""The pod/node simulator: a gang scheduler named `volcano` and a kubelet, as API clients."""
