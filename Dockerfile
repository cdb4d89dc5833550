# switchboard-mcp, one replica of the HTTP server.
#
# NOT EXERCISED HERE: the machine this project is built and tested on has no container engine, so
# this file is written to the documented behaviour of Docker and node:20-slim but has never been
# built. scripts/cluster.mjs runs the same topology (Redis, N replicas, nginx) with local processes
# and is what the tests use (test/cluster/); deploy/compose.yaml runs this image three times.
#
#   docker build -t switchboard-mcp .
#   docker run --rm -p 3000:3000 -e MCP_HTTP_TOKEN=... -e BUILD_API_KEY=... switchboard-mcp
#
# The server binds 0.0.0.0 in a container, which it refuses without MCP_HTTP_TOKEN (clients then
# send Authorization: Bearer <token>). See docs/deployment.md for the variables.

# ---- build: dependencies and the bundle ----
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# ---- runtime: dist/cli.js bundles every dependency, so no node_modules ----
FROM node:20-slim
WORKDIR /app
# dist/cli.js reads its version from ../package.json and its MCP Apps views from dist/views/.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/dist ./dist
USER node
EXPOSE 3000
# Liveness only (/healthz). Readiness (/readyz: Redis reachable, not draining) is for the balancer
# or the orchestrator, not for Docker's restart decisions.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:3000/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM (docker stop) starts the graceful drain; give it more than MCP_DRAIN_MS (docker stop -t,
# compose stop_grace_period).
CMD ["node", "dist/cli.js", "--transport", "http", "--host", "0.0.0.0", "--port", "3000"]
