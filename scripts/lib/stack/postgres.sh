# shellcheck shell=bash
# PostgreSQL of scripts/stack (sourced by it): where the cluster lives, initdb, our settings, start and stop, the
# roles' passwords (stack.env), and the database, roles and schemas the services need.

# Sets PG_BASE, PG_DATA, PG_SOCKET_DIR and PG_LOG.
#
# The cluster lives in the project (.local/postgres). As root, the server runs as `postgres`, which must be able to
# reach that directory; when a parent directory (a home directory, say) is closed to it, the cluster goes to
# /var/lib/favoriteme-stack/<hash of the project path> instead. With $1 = create, decides and prepares; otherwise
# just finds whichever existing cluster applies (for status/down/logs).
resolve_pg_layout() {
    local mode="${1:-find}" project_base="$LOCAL_DIR/postgres" fallback_base
    fallback_base="$(fallback_dir)/postgres"

    PG_BASE="$project_base"
    if is_root; then
        if [[ "$mode" == create ]]; then
            mkdir -p "$project_base"
            if ! runuser -u postgres -- test -x "$project_base"; then
                PG_BASE="$fallback_base"
                log_warn "the postgres user cannot reach $project_base (a parent directory is closed to it);"
                log_warn "keeping the database in $PG_BASE instead"
            fi
        elif [[ ! -d "$project_base/data" && -d "$fallback_base/data" ]]; then
            PG_BASE="$fallback_base"
        fi
    fi
    PG_DATA="$PG_BASE/data"
    PG_SOCKET_DIR="$PG_BASE/run"
    if [[ "$PG_BASE" == "$project_base" ]]; then
        PG_LOG="$LOG_DIR/postgres.log"
    else
        PG_LOG="$PG_BASE/postgres.log"
    fi
    # Unix socket paths are limited to 107 bytes; a deep checkout would make PostgreSQL fail with a cryptic error.
    local socket="$PG_SOCKET_DIR/.s.PGSQL.$PG_PORT"
    ((${#socket} <= 107)) || die "socket path $socket is longer than 107 bytes; move the checkout to a shorter path"
}

# Directories (and the log file) the server writes to must belong to the user it runs as.
prepare_pg_dirs() {
    mkdir -p "$PG_BASE" "$PG_SOCKET_DIR"
    touch "$PG_LOG"
    chmod 700 "$PG_SOCKET_DIR"
    if is_root; then
        chown -R postgres:postgres "$PG_BASE"
        chown postgres:postgres "$PG_LOG"
    fi
}

pg_ctl_cmd() { as_postgres_owner "$PG_BIN/pg_ctl" -D "$PG_DATA" "$@"; } # pg_ctl-argument…
pg_is_running() { [[ -f "$PG_DATA/PG_VERSION" ]] && pg_ctl_cmd status >/dev/null 2>&1; }

# Superuser psql over the Unix socket (trust auth there; the socket is 0700, so only its owner and root get in).
pg_psql() { # psql-argument…
    as_postgres_owner "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCKET_DIR" -p "$PG_PORT" -U postgres "$@"
}

pg_init_if_missing() {
    if [[ -f "$PG_DATA/PG_VERSION" ]]; then
        return 0
    fi
    log_info "initdb $PG_DATA"
    as_postgres_owner "$PG_BIN/initdb" -D "$PG_DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host=scram-sha-256 >>"$PG_LOG" 2>&1 \
        || { tail -n 20 "$PG_LOG" >&2; die "initdb failed (log: $PG_LOG)"; }
}

# Our settings live in their own file, re-rendered on every `up`, and postgresql.conf includes it once; initdb's
# postgresql.conf stays otherwise untouched.
pg_write_settings() {
    local settings="$PG_DATA/favoriteme-stack.conf"
    cat >"$settings" <<EOF
# Written by scripts/stack on every 'up'; edits are overwritten.
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_SOCKET_DIR'
unix_socket_permissions = 0700
max_connections = 200
EOF
    if ! grep -q "^include_if_exists = 'favoriteme-stack.conf'" "$PG_DATA/postgresql.conf"; then
        printf "\ninclude_if_exists = 'favoriteme-stack.conf'\n" >>"$PG_DATA/postgresql.conf"
    fi
    if is_root; then
        chown postgres:postgres "$settings"
    fi
}

pg_start_if_stopped() {
    if pg_is_running; then
        local running_port
        running_port="$(sed -n 4p "$PG_DATA/postmaster.pid" 2>/dev/null || true)"
        [[ "$running_port" == "$PG_PORT" ]] \
            || die "PostgreSQL is running on port $running_port, not STACK_PG_PORT=$PG_PORT; run 'scripts/stack down' first"
        log_info "PostgreSQL already running on 127.0.0.1:$PG_PORT"
        return 0
    fi
    port_in_use "$PG_PORT" && die "port $PG_PORT is taken by another process; set STACK_PG_PORT to a free port"
    log_info "starting PostgreSQL on 127.0.0.1:$PG_PORT (log: $PG_LOG)"
    pg_ctl_cmd -l "$PG_LOG" -w -t 60 start >/dev/null 9>&- \
        || { tail -n 20 "$PG_LOG" >&2; die "PostgreSQL did not start (log: $PG_LOG)"; }
}

# One password per role, generated once and kept in .local/stack.env (mode 600) so re-runs keep working clients.
password_key() { printf '%s_DB_PASSWORD\n' "$(service_role "$1" | tr '[:lower:]' '[:upper:]')"; } # service

random_password() {
    if command -v openssl >/dev/null 2>&1; then
        openssl rand -hex 24
    else
        od -An -tx1 -N24 /dev/urandom | tr -d ' \n'
        echo
    fi
}

# Reads KEY from stack.env without sourcing it (the file is data, not code).
stack_secret() { sed -n "s/^$1=//p" "$STACK_ENV_FILE" 2>/dev/null | tail -n 1; }

ensure_secrets() {
    local service key
    (
        umask 077
        if [[ ! -f "$STACK_ENV_FILE" ]]; then
            printf '# Generated by scripts/stack: database passwords of the local stack. Keep private.\n' >"$STACK_ENV_FILE"
        fi
    )
    chmod 600 "$STACK_ENV_FILE"
    for service in "${SERVICES[@]}"; do
        key="$(password_key "$service")"
        if [[ -z "$(stack_secret "$key")" ]]; then
            printf '%s=%s\n' "$key" "$(random_password)" >>"$STACK_ENV_FILE"
        fi
    done
}

# Database, roles, schemas and privileges; every statement is safe to repeat. Passwords travel on psql's stdin, never
# on a command line where `ps` would show them.
pg_bootstrap() {
    local service role schema roles=()
    for service in "${SERVICES[@]}"; do roles+=("$(service_role "$service")"); done
    local role_list
    role_list="$(IFS=,; echo "${roles[*]}")"

    log_info "bootstrapping database $DATABASE_NAME (roles ${role_list//,/, })"
    {
        echo "SET client_min_messages = warning;" # no 'already exists, skipping' notices on re-runs
        for service in "${SERVICES[@]}"; do
            role="$(service_role "$service")"
            printf '%s\n' "\\set ${role}_pw '$(stack_secret "$(password_key "$service")")'"
        done
        cat <<SQL
SELECT 'CREATE DATABASE $DATABASE_NAME' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '$DATABASE_NAME') \gexec
SQL
        for role in "${roles[@]}"; do
            cat <<SQL
SELECT format('CREATE ROLE %I LOGIN', '$role') WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$role') \gexec
ALTER ROLE $role WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'${role}_pw';
SQL
        done
        cat <<SQL
-- Only our three roles may connect, and CONNECT is all they get on the database (no CREATE, no TEMP).
REVOKE ALL ON DATABASE $DATABASE_NAME FROM PUBLIC;
REVOKE ALL ON DATABASE $DATABASE_NAME FROM $role_list;
GRANT CONNECT ON DATABASE $DATABASE_NAME TO $role_list;
SQL
    } | pg_psql -d postgres || die "bootstrapping roles and database failed"

    {
        echo "SET client_min_messages = warning;"
        echo "REVOKE CREATE ON SCHEMA public FROM PUBLIC;"
        for service in "${SERVICES[@]}"; do
            role="$(service_role "$service")"
            schema="$(service_schema "$service")"
            # ALTER as well: a schema created earlier by someone else still ends up owned by its service.
            printf 'CREATE SCHEMA IF NOT EXISTS %s AUTHORIZATION %s;\nALTER SCHEMA %s OWNER TO %s;\n' \
                "$schema" "$role" "$schema" "$role"
        done
    } | pg_psql -d "$DATABASE_NAME" || die "bootstrapping schemas failed"
}

pg_up() {
    resolve_pg_layout create
    prepare_pg_dirs
    pg_init_if_missing
    pg_write_settings
    pg_start_if_stopped
    ensure_secrets
    pg_bootstrap
}

pg_down() {
    resolve_pg_layout find
    if pg_is_running; then
        log_info "stopping PostgreSQL"
        pg_ctl_cmd -m fast -w -t 60 stop >/dev/null || die "pg_ctl stop failed (log: $PG_LOG)"
    fi
}
