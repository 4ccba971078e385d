# The balancer of docker/compose.yaml: HAProxy from Debian bookworm (the
# package scripts/deps.sh --replicas installs), with docker/haproxy.cfg.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends haproxy \
    && rm -rf /var/lib/apt/lists/*
COPY docker/haproxy.cfg /etc/haproxy/haproxy.cfg
USER haproxy
EXPOSE 8080
ENTRYPOINT ["haproxy", "-W", "-db", "-f", "/etc/haproxy/haproxy.cfg"]
