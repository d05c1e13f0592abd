# syntax=docker/dockerfile:1
#
# The rdmatopo vc-scheduler image: Volcano v1.10.0's scheduler with the
# rdma-topology plugin and the topology-allocate action compiled in. It is a
# drop-in for docker.io/volcanosh/vc-scheduler:v1.10.0 (same entrypoint path,
# same flags); see config/kustomize for the Deployment change.
#
#   docker build -t registry.example.com/rdmatopo/vc-scheduler:v0.1.0 \
#     --build-arg VERSION=v0.1.0 --build-arg GIT_SHA=$(git rev-parse HEAD) .

# Go release used to build; go.mod's go line is the minimum.
ARG GO_VERSION=1.24

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS builder
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
ARG GIT_SHA=unknown
WORKDIR /src

# Module downloads are their own layer: they change only with go.mod/go.sum.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

COPY . .
# Static binary (no cgo), built by the Makefile's vc-scheduler target: it
# stamps rdmatopo's version package (rdmatopo_build_info, which reads
# VERSION and GIT_SHA; the build context has no .git to read them from) and
# Volcano's (`vc-scheduler --version`).
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} GOFLAGS=-trimpath \
    make vc-scheduler cli BIN=/out VERSION=${VERSION} GIT_SHA=${GIT_SHA}

# Distroless static: no shell, no package manager, CA certificates and tzdata
# only. It runs as root like the stock alpine image, because the stock
# Deployment mounts a hostPath (/tmp/klog-socks) where the scheduler creates
# its log-level socket; see docs/security.md for running as non-root.
FROM gcr.io/distroless/static-debian12
COPY --from=builder /out/vc-scheduler /vc-scheduler
# Companion mode runs the same image as `/rdmatopo companion`.
COPY --from=builder /out/rdmatopo /rdmatopo
ENTRYPOINT ["/vc-scheduler"]
