#!/bin/sh
# What the Dockerfile does, without Docker (which cannot run on every build machine):
#   1. runs scripts/build-release.sh, the very script the image's RUN line runs;
#   2. checks that the two binaries the image copies exist;
#   3. checks that config/docker.toml, the image's /etc/runnel/runneld.toml, is a valid
#      configuration listening on 0.0.0.0:7455 and serving HTTP on 0.0.0.0:7456
#      (`runneld --check-config`), both ports exposed;
#   4. runs `runnel --help` (the HEALTHCHECK binary starts);
#   5. checks that the Dockerfile copies every folder the build reads, and nothing by name
#      that a fresh clone lacks.
# SWIFT selects the swift driver, as in build-release.sh (on the shared build machines:
# SWIFT=/work/bin/sbuild).
set -eu
cd "$(dirname "$0")/.."

scripts/build-release.sh

for binary in runneld runnel; do
    if [ ! -x ".build/release/$binary" ]; then
        echo "docker-build-check: .build/release/$binary was not built" >&2
        exit 1
    fi
done

summary=$(.build/release/runneld --check-config --config config/docker.toml)
printf '%s\n' "$summary"
if ! printf '%s\n' "$summary" | grep -q '0\.0\.0\.0:7455'; then
    echo "docker-build-check: config/docker.toml does not listen on 0.0.0.0:7455" >&2
    exit 1
fi
if ! printf '%s\n' "$summary" | grep -q 'http_listen = "0\.0\.0\.0:7456"'; then
    echo "docker-build-check: config/docker.toml does not serve HTTP on 0.0.0.0:7456" >&2
    exit 1
fi
for port in 7455 7456; do
    grep -q "^EXPOSE $port\$" Dockerfile || { echo "docker-build-check: Dockerfile does not EXPOSE $port" >&2; exit 1; }
done
# The build reads these folders besides Package.swift (Plugins/EmbedDashboard puts web/ and
# clients/js/ in the binary); the image has only what the Dockerfile copies.
for folder in Sources Plugins web clients/js; do
    grep -q "^COPY $folder $folder\$" Dockerfile || {
        echo "docker-build-check: the Dockerfile does not COPY $folder, which the build reads" >&2
        exit 1
    }
done
# Every file or folder the build stage copies by name is in a fresh clone (a name with a
# pattern may match nothing; a plain name that git does not keep fails `docker build`).
set -f  # the names are read as written, not expanded against this checkout's files
for source in $(awk '$1 == "COPY" && $2 !~ /^--/ { for (i = 2; i < NF; i++) print $i }' Dockerfile); do
    case $source in *[][*?]*) continue ;; esac
    git ls-files --error-unmatch "$source" >/dev/null 2>&1 || {
        echo "docker-build-check: the Dockerfile copies $source, which a fresh clone does not have" >&2
        exit 1
    }
done
set +f
grep -q '^RUN scripts/build-release.sh$' Dockerfile || {
    echo "docker-build-check: the Dockerfile no longer builds with scripts/build-release.sh" >&2
    exit 1
}
.build/release/runnel --help > /dev/null
echo "docker-build-check: OK"
