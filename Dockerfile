# syntax=docker/dockerfile:1
# Node 24 LTS on Debian 13 (trixie). Pinned to the exact tag: its digest could not be read where this
# file was written (no image registry is reachable there). A release pins the digest too, by passing
# NODE_IMAGE=node:<tag>@sha256:<digest> (docs/deploy.md, Image).
ARG NODE_IMAGE=node:24.22.3-trixie-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY scripts/sbom.mjs ./scripts/
# `npm ci` builds dist/ (the prepare script) with the dev dependencies, which are then removed; the SBOM
# lists what is left, which is what the image runs.
RUN npm ci && npm prune --omit=dev && node scripts/sbom.mjs sbom.cdx.json

FROM ${NODE_IMAGE}
# What the labels say: VERSION is package.json's (test/deploy keeps them equal); a release passes the
# commit and the repository's address.
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE=unknown
LABEL org.opencontainers.image.title="evidence-gateway" \
      org.opencontainers.image.description="Telemetry and evidence gateway: login, asset track, event evidence on S3, run harness" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0"
# tini runs as PID 1 and hands signals to the gateway. Needed: the gateway installs its SIGTERM handler
# only once it listens, and the kernel drops a signal PID 1 has no handler for, so a pod stopped while
# its gateway was still connecting to Kafka or S3 would wait out its whole grace period. tini forwards to
# its child alone (no -g): with WORKERS > 1 that is the supervisor, which drains the workers itself.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 HARNESS_PORT=8081 DATA_DIR=/data
WORKDIR /app
# The code belongs to root: the gateway's user can read it, not change it.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/sbom.cdx.json ./
RUN mkdir -p /data && chown node:node /data
# `node`, by number, so that Kubernetes can check runAsNonRoot.
USER 1000:1000
VOLUME /data
# 8082: the peer port of a cluster (worker i of WORKERS listens on 8082 + i - 1).
EXPOSE 8080 8081 8082
# Liveness, not readiness: a broker outage makes the gateway unready (load balancers skip it), and a
# restart would not bring the broker back.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--max-semi-space-size=8", "bin/gateway.js"]
CMD ["start"]
