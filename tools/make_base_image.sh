#!/bin/sh
# Build a stand-in for python:3.11-slim-bookworm from Debian's own packages, for a machine
# whose Docker daemon cannot pull from an image registry (docs/container.md).
#
#   tools/make_base_image.sh [TAG] [MIRROR]          # as root, or prefix sudo
#   docker build --build-arg BASE=TAG -t hermes-server .
#
# Debian bookworm's python3 is 3.11, as the image's. A virtualenv at /usr/local gives the
# same layout the slim image has: python and pip first on PATH, packages installed under
# /usr/local, none of Debian's Python packages in the way of the pinned ones.
set -eu
TAG=${1:-hermes-server-base:bookworm}
MIRROR=${2:-http://deb.debian.org/debian}
ROOT=$(mktemp -d /tmp/hermes-base-rootfs.XXXXXX)
chmod 755 "$ROOT"  # it becomes the image's /: every user must traverse it
trap 'rm -rf "$ROOT"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates,curl,wget bookworm "$ROOT" "$MIRROR"
chroot "$ROOT" python3 -m venv /usr/local
# The host's CA bundle, in case the package registry is reached through a proxy it trusts.
cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/certs/ca-certificates.crt"
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/apt/*.bin "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/*
tar -C "$ROOT" -c . | docker import \
    --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' \
    - "$TAG"
docker run --rm --network host "$TAG" python -c 'import sys, ssl; assert sys.version_info[:2] == (3, 11); print("base ok", sys.version.split()[0])'
docker run --rm --network host --user 10001:10001 "$TAG" python -c "print(\"base usable by a non-root user\")"
