# Multi-stage build: a static binary on a distroless base, running as a
# non-root user. The service creates its tables at start-up.
# Any golang:1.26 image builds it: go.mod asks for go 1.26.0, and the image
# keeps to its own Go (GOTOOLCHAIN=local).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum go.work ./
# The client is a module of its own, which go.mod replaces with ./client.
COPY client/go.mod client/
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/countersvc . && \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/countersctl ./cmd/countersctl

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/countersvc /countersvc
# The command-line client, for: docker compose exec counters /countersctl get hello
# (inside the container the service is http://localhost:8080, and loopback).
COPY --from=build /out/countersctl /countersctl
USER nonroot:nonroot
ENV COUNTERS_ADDR=:8080
EXPOSE 8080
ENTRYPOINT ["/countersvc"]
