# syntax=docker/dockerfile:1
# The one image both vcjob processes run: `vcjob webhook` and `vcjob controller`.
#
#   docker build -t registry.example.com/vcjob:0.1.0 .
#   docker push registry.example.com/vcjob:0.1.0
#
# See docs/install.md (multi-arch builds with buildx, pointing the chart at the image).

ARG PYTHON_IMAGE=python:3.11-slim

# ---- builder: the vcjob wheel and the wheels of every dependency -------------------------------
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY shared ./shared
COPY kubeio ./kubeio
COPY webhook ./webhook
COPY controller ./controller
COPY localcluster ./localcluster
RUN python -m pip wheel --wheel-dir /wheels .

# ---- runtime: slim Python, the installed wheels, a non-root user, nothing to build with ---------
FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="vcjob" \
      org.opencontainers.image.description="Volcano batch Jobs for Kubernetes: admission webhook and controller" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/tmp
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    python -m pip install --no-index --find-links=/wheels vcjob \
    && python -m pip uninstall --yes pip setuptools wheel \
    && groupadd --system --gid 65532 vcjob \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin vcjob
USER 65532:65532
WORKDIR /tmp
# 9443 webhook TLS, 8081 /healthz and /readyz, 8080 /metrics
EXPOSE 9443 8081 8080
ENTRYPOINT ["vcjob"]
CMD ["--help"]
