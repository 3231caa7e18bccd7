# Runnel server image.   docker build -t runnel . && docker run -p 7455:7455 -p 7456:7456 runnel
# The build commands are in scripts/build-release.sh; scripts/docker-build-check.sh runs the
# same script and checks config/docker.toml without Docker.
ARG SWIFT_IMAGE=swift:6.3-bookworm

FROM ${SWIFT_IMAGE} AS build
RUN apt-get update && apt-get install -y --no-install-recommends libuv1-dev libsqlite3-dev libhttp-parser-dev libssl-dev zlib1g-dev libnats-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Package.resolved pins the dependencies where a checkout has one (git keeps none): the
# pattern copies it when present and does not fail without it.
COPY Package.swift Package.resolve[d] ./
RUN swift package resolve
COPY Sources Sources
# The plugin that puts the dashboard (web/dashboard/) and the JavaScript client (clients/js/) in
# the binary at build time, and their files.
COPY Plugins Plugins
COPY web web
COPY clients/js clients/js
COPY Tests Tests
COPY scripts/build-release.sh scripts/
# The image has no .git: the version `--version` prints comes from the build argument, which
# RUN sees as an environment variable
# (docker build --build-arg RUNNEL_VERSION=$(git describe --tags --always --dirty) .).
ARG RUNNEL_VERSION=unknown
RUN scripts/build-release.sh

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libuv1 libsqlite3-0 libhttp-parser2.9 libssl3 zlib1g libnats3.4 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --no-create-home --shell /usr/sbin/nologin runnel \
    && install -d -o runnel -g runnel /var/lib/runnel
COPY --from=build /src/.build/release/runneld /src/.build/release/runnel /usr/local/bin/
COPY config/docker.toml /etc/runnel/runneld.toml
USER runnel
# Durable subjects (config/docker.toml's data_dir): mount a volume here to keep them.
VOLUME /var/lib/runnel
# The line protocol, then the HTTP front door.
EXPOSE 7455
EXPOSE 7456
HEALTHCHECK --interval=30s --timeout=5s --start-period=5s CMD ["runnel", "ping", "--timeout", "3"]
ENTRYPOINT ["runneld"]
CMD ["--config", "/etc/runnel/runneld.toml"]
