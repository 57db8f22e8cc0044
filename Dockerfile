# Multi-stage build of both binaries; the final images hold one static binary each and run as
# a non-root user. `make image` builds them (it needs a Docker engine).
FROM golang:1.26 AS build
ARG VERSION=v0.1.0-dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/mysqlop/mysql-operator/pkg/version.Version=${VERSION}" \
      -o /out/ ./cmd/mysql-operator ./cmd/mysql-agent

FROM gcr.io/distroless/static-debian12:nonroot AS operator
COPY --from=build /out/mysql-operator /mysql-operator
USER 65532:65532
ENTRYPOINT ["/mysql-operator"]

# The agent image is run as an init container that copies /mysql-agent into the pod, and as the
# agent sidecar; it runs as the mysql uid of the server images. It holds no backup tool: the
# copied binary runs them in the pod's toolbox container, from the server image.
FROM gcr.io/distroless/static-debian12:nonroot AS agent
COPY --from=build /out/mysql-agent /mysql-agent
USER 999:999
ENTRYPOINT ["/mysql-agent"]
