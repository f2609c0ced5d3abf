#!/bin/sh
# The image's entrypoint: upstream's container contract (docs/container.md), then hermes-server.
#
# Started as root (the default), as upstream's image is, it
#   1. serves /data instead of /opt/data when only /data is mounted (hermes-server's home before
#      it moved to upstream's /opt/data); with both mounted, /opt/data wins and this says so;
#   2. makes the `hermes` user uid HERMES_UID (else PUID, else 10000) and gid HERMES_GID (else
#      PGID, else 10000), so a host folder owned by that user is writable as it is;
#   3. gives the home to that user only where it is someone else's: the folder itself, its
#      top-level files and its cron/ and profiles/ trees (what hermes-server writes), nothing else;
#   4. runs hermes-server as that user with no capability left (util-linux's setpriv): the server
#      never runs as root.
# Started with --user, it runs hermes-server as that user and changes nothing.
# A first argument that is a program on PATH (sh, sleep …) runs instead of hermes-server, as upstream's.
set -eu

say() {
    if [ "${HERMES_SERVER_LOG_FORMAT:-}" = json ]; then
        printf '{"time": "%s", "level": "%s", "logger": "hermes_server.entrypoint", "message": "%s"}\n' \
            "$(date -u +%Y-%m-%dT%H:%M:%S.000Z)" "$1" "$(printf '%s' "$2" | sed 's/\\/\\\\/g; s/"/\\"/g')" >&2
    else
        printf 'hermes-server entrypoint: %s\n' "$2" >&2
    fi
}

mounted() {  # whether $1 is a mount point of this container
    while read -r _ _ _ _ point _; do
        [ "$point" = "$1" ] && return 0
    done < /proc/self/mountinfo
    return 1
}

[ "$#" -gt 0 ] || set -- serve
case "$1" in
    serve|gateway|seed|healthcheck|audit|-*) set -- hermes-server "$@" ;;
    *) command -v "$1" >/dev/null 2>&1 || set -- hermes-server "$@" ;;
esac

export HERMES_HOME="${HERMES_HOME:-/opt/data}"
if [ "$HERMES_HOME" = /opt/data ] && mounted /data; then
    if mounted /opt/data; then
        say warning "both /opt/data and /data are mounted: serving /opt/data (upstream's home); /data is not used"
    elif [ -L /opt/data ] || { [ "$(id -u)" = 0 ] && rmdir /opt/data 2>/dev/null && ln -s /data /opt/data; }; then
        say info "only /data is mounted (the home of earlier hermes-server images): serving it as /opt/data"
    else
        export HERMES_HOME=/data
        say warning "only /data is mounted: serving it; started as uid $(id -u), /opt/data cannot point there, so set HERMES_HOME=/data for health checks to find its key"
    fi
fi

if [ "$(id -u)" != 0 ]; then
    exec "$@"
fi

valid_id() {  # a user or group id the server may run as: a number from 1 to 65534, never root's 0
    case "$1" in ''|*[!0-9]*) return 1 ;; esac
    [ "$1" -ge 1 ] && [ "$1" -le 65534 ]
}

uid="${HERMES_UID:-${PUID:-10000}}"
gid="${HERMES_GID:-${PGID:-10000}}"
valid_id "$uid" || { say error "HERMES_UID (or PUID) '$uid' must be a number from 1 to 65534: the server never runs as root"; exit 2; }
valid_id "$gid" || { say error "HERMES_GID (or PGID) '$gid' must be a number from 1 to 65534: the server never runs as root"; exit 2; }
[ "$(id -u hermes)" = "$uid" ] || usermod --non-unique --uid "$uid" hermes
[ "$(id -g hermes)" = "$gid" ] || groupmod --non-unique --gid "$gid" hermes
[ "$uid:$gid" = 10000:10000 ] || say info "running as uid $uid, gid $gid (HERMES_UID/HERMES_GID or PUID/PGID)"

mkdir -p "$HERMES_HOME" 2>/dev/null || true
home="$(readlink -f "$HERMES_HOME" 2>/dev/null || printf '%s' "$HERMES_HOME")"
given=""
if [ -d "$home" ]; then  # anything else (a file, a path below one) the server itself reports
    if [ "$(stat -c %u "$home")" != "$uid" ]; then
        if chown "$uid:$gid" "$home" 2>/dev/null; then
            given="the folder"
        else
            say warning "cannot give $home to uid $uid (a read-only or rootless mount?): the server reports itself not ready if it cannot write there"
        fi
    fi
    files="$(find "$home" -mindepth 1 -maxdepth 1 -type f ! -user "$uid" 2>/dev/null | wc -l)"
    if [ "$files" -gt 0 ] && find "$home" -mindepth 1 -maxdepth 1 -type f ! -user "$uid" -exec chown "$uid:$gid" {} + 2>/dev/null; then
        given="${given:+$given, }$files top-level file(s)"
    fi
    for tree in cron profiles; do
        if [ -d "$home/$tree" ] && [ ! -L "$home/$tree" ] && [ -n "$(find "$home/$tree" ! -user "$uid" -print -quit 2>/dev/null)" ] \
                && chown -R "$uid:$gid" "$home/$tree" 2>/dev/null; then
            given="${given:+$given, }$tree/"
        fi
    done
fi
[ -z "$given" ] || say info "gave uid $uid what it must write in $home: $given"

export HOME="$home"
exec setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all --no-new-privs -- "$@"
