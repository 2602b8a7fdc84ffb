# syntax=docker/dockerfile:1
#
# FavoriteMe Cloud: the three services in containers (used by docker-compose.yml; see deploy/README.md).
#
# Stages:
#   build                  Swift toolchain + libpq-dev; compiles every product, release, static Swift stdlib
#   runtime                debian:bookworm-slim + libpq5 + ca-certificates + curl, non-root user 10001, all binaries
#   auth-service           runtime with ENTRYPOINT auth-service      (docker build --target auth-service .)
#   catalog-proxy          runtime with ENTRYPOINT catalog-proxy     (docker build --target catalog-proxy .)
#   favorites-service      runtime with ENTRYPOINT favorites-service (docker build --target favorites-service .)
#   replay-upstream        runtime with ENTRYPOINT replay-upstream: recorded Ticketmaster/Rijksmuseum answers for a
#                          keyless stack (the fixtures are mounted at /fixtures, see docker-compose.yml)
#   favoriteme (default)   runtime that runs whichever service is named as the command:
#                            docker build -t favoriteme . && docker run favoriteme catalog-proxy
# The per-service stages differ only in metadata, so all four images share every layer that holds data.
#
# Toolchain: swift:6.3-bookworm is the newest 6.x bookworm tag we know of (built from swift-docker's 6.3/debian/12;
# developers run Swift 6.3.1 locally). Package.swift declares tools-version 6.1, so `--build-arg
# SWIFT_IMAGE=swift:6.1-bookworm` is the oldest toolchain that can work. Both are Debian 12 (bookworm), the same
# release as the runtime stage, so libpq-dev at build time and libpq5 at run time come from the same Debian.
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# =====================================================================================================================
FROM ${SWIFT_IMAGE} AS build

# libpq-dev for the CLibpq system library (found through pkg-config, which the Swift image already ships).
# hadolint ignore=DL3008
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpq-dev \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src

# Dependencies first, in their own layer: it is rebuilt only when the manifest or the pins change. Package.resolved is
# gitignored, so the glob keeps the COPY working in a fresh clone that has none (then the newest allowed versions
# are resolved).
COPY Package.swift Package.resolve[d] ./
RUN swift package resolve

# Then the sources: the whole context, which .dockerignore trims to what the manifest can point at. Every target
# directory must be present (SwiftPM refuses to load a package whose custom target paths are missing, test and bench
# targets included, although only the three products are compiled).
COPY . .

# One product at a time (they share every library module, so the second and third mostly link). The Swift runtime
# and Foundation are linked statically; what stays dynamic is glibc, libstdc++, libgcc_s, zlib, libpq and libssl (the
# Postgres module asks OpenSSL for input it holds on TLS sessions; libpq5 brings libssl3 into the runtime image anyway).
RUN for product in auth-service catalog-proxy favorites-service replay-upstream; do \
        swift build -c release --static-swift-stdlib --product "$product" || exit 1; \
    done \
    && bin="$(swift build -c release --static-swift-stdlib --show-bin-path)" \
    && mkdir -p /staging \
    && install -m 0755 "$bin/auth-service" "$bin/catalog-proxy" "$bin/favorites-service" "$bin/replay-upstream" \
        /staging/ \
    && cp -R "$bin/favoriteme-cloud_Contracts.resources" /staging/ \
    && cp /usr/libexec/swift/linux/swift-backtrace-static /staging/swift-backtrace

# =====================================================================================================================
FROM ${RUNTIME_IMAGE} AS runtime

# libpq5: the PostgreSQL client library the services link. ca-certificates: TLS to outside APIs (catalog-proxy) and
# to PostgreSQL with sslmode=verify-full. curl: the health checks (here and in docker-compose.yml); no Swift code uses
# FoundationNetworking, so it is not needed by the services themselves. libstdc++6 and zlib1g are already part of the
# base image but are named because the binaries link them.
# Versions are not pinned (DL3008): bookworm point releases replace the exact versions, and a pin would break the
# build on the next security update; the base image tag is what fixes the Debian release.
# hadolint ignore=DL3008
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates curl libpq5 libstdc++6 zlib1g \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 favoriteme \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin favoriteme

COPY --from=build /staging/auth-service /staging/catalog-proxy /staging/favorites-service /staging/replay-upstream \
    /usr/local/bin/
# The resource bundle of the Contracts module (the OpenAPI document every service serves), found beside the
# executables; a service without it refuses to start.
COPY --from=build /staging/favoriteme-cloud_Contracts.resources /usr/local/bin/favoriteme-cloud_Contracts.resources
COPY --from=build /staging/swift-backtrace /usr/local/libexec/swift-backtrace

# Inside a container the services must listen on every interface (their own default is 127.0.0.1). Crash reports from
# the Swift runtime go to stderr as text; with a static stdlib the backtracer has to be named explicitly.
ENV HTTP_HOST=0.0.0.0 \
    LOG_FORMAT=json \
    SWIFT_BACKTRACE=enable=yes,sanitize=yes,threads=all,images=all,interactive=no,swift-backtrace=/usr/local/libexec/swift-backtrace

USER 10001:10001
WORKDIR /
STOPSIGNAL SIGTERM

# =====================================================================================================================
# One stage per service: ENTRYPOINT, port, schema and health check baked in. The health check follows HTTP_PORT, so
# overriding the port at run time keeps it working. /health/live needs neither the database nor peers.

FROM runtime AS auth-service
ENV HTTP_PORT=8081 \
    DATABASE_SCHEMA=auth
EXPOSE 8081
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["/bin/sh", "-c", "curl -fsS -o /dev/null --max-time 2 \"http://127.0.0.1:${HTTP_PORT}/health/live\" || exit 1"]
ENTRYPOINT ["/usr/local/bin/auth-service"]

FROM runtime AS catalog-proxy
ENV HTTP_PORT=8082 \
    DATABASE_SCHEMA=catalog
EXPOSE 8082
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["/bin/sh", "-c", "curl -fsS -o /dev/null --max-time 2 \"http://127.0.0.1:${HTTP_PORT}/health/live\" || exit 1"]
ENTRYPOINT ["/usr/local/bin/catalog-proxy"]

FROM runtime AS favorites-service
ENV HTTP_PORT=8083 \
    DATABASE_SCHEMA=favorites
EXPOSE 8083
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["/bin/sh", "-c", "curl -fsS -o /dev/null --max-time 2 \"http://127.0.0.1:${HTTP_PORT}/health/live\" || exit 1"]
ENTRYPOINT ["/usr/local/bin/favorites-service"]

FROM runtime AS replay-upstream
EXPOSE 8090
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["/bin/sh", "-c", "curl -fsS -o /dev/null --max-time 2 http://127.0.0.1:8090/health || exit 1"]
ENTRYPOINT ["/usr/local/bin/replay-upstream", "--host", "0.0.0.0", "--port", "8090", "--fixtures", "/fixtures"]

# Default target (last stage): one image for all three; the command names the service, and each service uses its own
# default port (8081/8082/8083) and schema unless HTTP_PORT/DATABASE_SCHEMA are set. No HEALTHCHECK here, because
# the port depends on the command; orchestrators probe GET /health/live themselves.
FROM runtime AS favoriteme
EXPOSE 8081 8082 8083
CMD ["auth-service"]
