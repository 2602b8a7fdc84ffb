# shellcheck shell=bash
# Shared helpers of the scripts, sourced (callers run with `set -euo pipefail`; nothing here relies on it being off).

if [[ -n "${FAVORITEME_COMMON_SH:-}" ]]; then
    return 0
fi
FAVORITEME_COMMON_SH=1

# PostgreSQL 15 binaries live outside PATH on Debian (postgresql-common only links wrappers), so use them directly.
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"

# Logging goes to stderr, so stdout stays clean for output meant to be read or piped (status table, URLs).

if [[ -t 2 && -z "${NO_COLOR:-}" ]]; then
    _C_RESET=$'\033[0m' _C_BOLD=$'\033[1m' _C_RED=$'\033[31m' _C_YELLOW=$'\033[33m' _C_BLUE=$'\033[34m'
else
    _C_RESET='' _C_BOLD='' _C_RED='' _C_YELLOW='' _C_BLUE=''
fi

log_info() { printf '%s==>%s %s\n' "${_C_BLUE}${_C_BOLD}" "${_C_RESET}" "$*" >&2; }
log_warn() { printf '%swarning:%s %s\n' "${_C_YELLOW}${_C_BOLD}" "${_C_RESET}" "$*" >&2; }
log_error() { printf '%serror:%s %s\n' "${_C_RED}${_C_BOLD}" "${_C_RESET}" "$*" >&2; }

# Prints the message and exits non-zero; the single way scripts give up, so failures always look the same.
die() {
    log_error "$*"
    exit 1
}

# The repository root, from this file's place (not the working directory), so scripts work from anywhere.
project_root() {
    local root
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
    [[ -f "$root/Package.swift" ]] || die "cannot find the project root (no Package.swift in $root)"
    printf '%s\n' "$root"
}

is_root() { [[ "$(id -u)" -eq 0 ]]; }

# Finds nginx even for normal users, whose PATH usually lacks /usr/sbin.
nginx_bin() {
    local candidate
    candidate="$(command -v nginx 2>/dev/null || true)"
    if [[ -z "$candidate" && -x /usr/sbin/nginx ]]; then
        candidate=/usr/sbin/nginx
    fi
    [[ -n "$candidate" ]] || return 1
    printf '%s\n' "$candidate"
}

# The Debian packages of each requirement. A requirement is checked by what we use (a header, a binary at its path),
# not by asking dpkg, so a hand-built install counts.
declare -A _REQUIREMENT_PACKAGES=(
    [libpq-dev]="libpq-dev pkg-config" [postgresql-15]="postgresql-15 postgresql-client-15" [nginx]=nginx
    [curl]=curl [python3]=python3 [python3-venv]="python3 python3-venv" [openssl]=openssl [wrk]=wrk
    [promtool]=prometheus [shellcheck]=shellcheck [envsubst]=gettext-base [perf]=linux-perf
    [docker-compose]=docker-compose # v1, enough for `config`; v2 is not in Debian 12
)

# Succeeds when requirement $1 is already met; most are met by their command on PATH.
_requirement_met() {
    [[ -n "${_REQUIREMENT_PACKAGES[$1]:-}" ]] || die "ensure_packages: unknown requirement '$1'"
    case "$1" in
        libpq-dev) command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libpq ;;
        postgresql-15) local tool; for tool in initdb pg_ctl pg_isready postgres psql; do [[ -x "$PG_BIN/$tool" ]] || return 1; done ;;
        nginx) nginx_bin >/dev/null ;;
        python3-venv) command -v python3 >/dev/null 2>&1 && python3 -c 'import ensurepip, venv' 2>/dev/null ;;
        python3) command -v python3 >/dev/null 2>&1 && python3 -c 'import ssl' 2>/dev/null ;;
        openssl) [[ -x /usr/bin/openssl ]] ;; # the path the tests call it by
        *) command -v "$1" >/dev/null 2>&1 ;;
    esac
}

_APT_UPDATED=0

# `apt-get update` at most once per script run: it is slow, and the package lists do not change between installs.
_apt_update_once() {
    if [[ "$_APT_UPDATED" -eq 0 ]]; then
        log_info "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        _APT_UPDATED=1
    fi
}

# ensure_packages REQUIREMENT…: as root, installs what is missing with apt-get; otherwise prints the command and fails
# (a script half-working without, say, libpq fails far more confusingly later).
ensure_packages() {
    local requirement
    local -a missing=()
    for requirement in "$@"; do
        # shellcheck disable=SC2206 # the table's package lists split on spaces
        _requirement_met "$requirement" || missing+=(${_REQUIREMENT_PACKAGES[$requirement]})
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0

    if ! is_root; then
        log_error "missing system packages: ${missing[*]}"
        printf '\nInstall them with:\n\n    sudo apt-get update && sudo apt-get install -y %s\n\nthen run this command again.\n' \
            "${missing[*]}" >&2
        exit 1
    fi
    command -v apt-get >/dev/null 2>&1 || die "missing packages (${missing[*]}) and no apt-get to install them with"

    _apt_update_once
    log_info "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2

    for requirement in "$@"; do
        _requirement_met "$requirement" || die "'$requirement' is still not usable after installing ${missing[*]}"
    done
}

# The one build configuration of every script, so what one builds the others reuse: no debug info, which nothing
# reads (the index store stays: on Linux, test discovery reads it). scripts/build is `swift build` with these.
# shellcheck disable=SC2034  # read by the scripts that source this file
SWIFT_BUILD_FLAGS=(-debug-info-format none)

# Runs the built tests' executable (Swift Testing's arguments), not `swift test`, which would plan the package again
# and hold SwiftPM's lock on .build while the tests run, so two stages could not test side by side.
run_built_tests() {
    NO_COLOR=1 "$(project_root)/.build/debug/favoriteme-cloudPackageTests.xctest" --testing-library swift-testing "$@"
}

# The Swift toolchain cannot come from apt, so only check for it and explain.
ensure_swift() { command -v swift >/dev/null || die "swift is not on PATH; install a Swift 6.2 toolchain (swift.org/install)"; }

# Runs a command as the owner of our PostgreSQL cluster: PostgreSQL refuses root, so as root that is `postgres` (via
# runuser: no password, no PAM session), run from / so tools do not warn about a directory postgres cannot enter.
as_postgres_owner() {
    if is_root; then
        id -u postgres >/dev/null 2>&1 || die "there is no 'postgres' system user (install postgresql-15)"
        (cd / && runuser -u postgres -- "$@")
    else
        (cd / && "$@")
    fi
}

# Tools made once per machine live outside the clone, a directory per tool and version (deleting it is always safe).
TOOL_CACHE="${FAVORITEME_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/favoriteme}"

# tool_dir NAME KEY…: the cache directory of a tool, named by a digest of what it is made from.
tool_dir() { printf '%s/%s-%s\n' "$TOOL_CACHE" "$1" "$(printf '%s\n' "${@:2}" | sha256sum | cut -c1-12)"; }

# venv_dir NAME PACKAGE==VERSION…: where ensure_venv keeps that venv.
venv_dir() { tool_dir "venv-$1" "${@:2}"; }

# ensure_venv NAME PACKAGE==VERSION…: sets VENV to a venv of exactly those PyPI packages, made once per machine; a
# stamp marks it finished (an interrupted install is redone), a lock keeps two runs from making it at once.
ensure_venv() {
    VENV="$(venv_dir "$@")"
    shift
    [[ -f "$VENV/.complete" ]] && return 0
    mkdir -p "$TOOL_CACHE"
    (
        flock 8
        [[ -f "$VENV/.complete" ]] && exit 0
        log_info "installing $* into $VENV"
        rm -rf "$VENV"
        python3 -m venv "$VENV" || die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
        "$VENV/bin/python" -m pip --disable-pip-version-check -q install "$@" >&2 || die "pip could not install $*"
        touch "$VENV/.complete"
    ) 8>"$VENV.lock" || exit 1
}

# The SMTP server of the stack and the tests (scripts/mail-server.py, on aiosmtpd); MAIL_PYTHON runs it.
AIOSMTPD_REQUIREMENT="aiosmtpd==1.4.6"
ensure_mail_server() {
    ensure_venv mail "$AIOSMTPD_REQUIREMENT"
    export MAIL_PYTHON="$VENV/bin/python"
}

# The OTLP receiver of the end-to-end stage (scripts/otlp-sink.py, on opentelemetry-proto); OTLP_SINK_PYTHON runs it.
OTLP_PROTO_REQUIREMENT="opentelemetry-proto==1.45.2"
ensure_otlp_sink() {
    ensure_venv otlp "$OTLP_PROTO_REQUIREMENT"
    # shellcheck disable=SC2034  # read by scripts/lib/e2e.sh
    OTLP_SINK_PYTHON="$VENV/bin/python"
}
