# shellcheck shell=bash
# Reverse proxies from Debian's packages as peers of lather's gateway: nginx and HAProxy in
# front of a backend on loopback, keeping their upstream connections open as lather's gateway
# does. Source it after lib.sh; do not run it.
#
# proxy_peer KIND DIR UPSTREAM_PORT : starts KIND (nginx or haproxy) listening on a free
# loopback port, forwarding every path to 127.0.0.1:UPSTREAM_PORT, its configuration, log and
# temporary files in DIR. Sets started_port and proxy_pid, the process whose
# /proc/PID/stat holds all of the proxy's forwarding CPU:
# - nginx: one worker process (`worker_processes 1`, the frugal setting for a fixed rate on
#   two cores; its master only starts and stops it), HTTP/1.1 upstream with `keepalive 64`;
# - haproxy: one process with two threads (`nbthread 2`, one per CPU here) and
#   `http-reuse always`.
# The process started (nginx's master, HAProxy) is stopped by stop_all on exit.
#
# proxy_installed KIND : true when KIND's program is on the PATH.
proxy_installed() { command -v "$1" >/dev/null 2>&1; }

proxy_peer() {
    local kind=$1 dir=$2 upstream=$3 config i
    mkdir -p "$dir"
    started_port="$(free_port)"
    case $kind in
        nginx)
            proxy_installed nginx || die "nginx not found (apt-get install -y nginx-light)"
            config="$dir/nginx.conf"
            cat >"$config" <<CONF
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    upstream backend { server 127.0.0.1:$upstream; keepalive 64; }
    server {
        listen 127.0.0.1:$started_port;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
CONF
            start_bg "$dir/nginx.log" nginx -c "$config" -e "$dir/nginx-error.log"
            wait_for nginx "$bg_pid" "$dir/nginx.log" 10 port_open "$started_port"
            proxy_pid=""
            for ((i = 0; i < 50; i++)); do
                proxy_pid="$(pgrep -P "$bg_pid" | head -n1 || true)"
                [ -n "$proxy_pid" ] && break
                sleep 0.1
            done
            [ -n "$proxy_pid" ] || die "nginx (pid $bg_pid) started no worker; see $dir/nginx-error.log"
            ;;
        haproxy)
            proxy_installed haproxy || die "haproxy not found (apt-get install -y haproxy)"
            config="$dir/haproxy.cfg"
            cat >"$config" <<CONF
global
    nbthread 2
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    http-reuse always
frontend peer
    bind 127.0.0.1:$started_port
    default_backend upstream
backend upstream
    server backend 127.0.0.1:$upstream
CONF
            start_bg "$dir/haproxy.log" haproxy -f "$config"
            wait_for haproxy "$bg_pid" "$dir/haproxy.log" 10 port_open "$started_port"
            proxy_pid=$bg_pid
            ;;
        *) die "unknown proxy $kind (nginx or haproxy)" ;;
    esac
}
