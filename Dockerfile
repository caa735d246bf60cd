# The controller and exporter (rdma-telemetry), for docker-compose.yml.
FROM node:22.22-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json tsconfig.base.json tsconfig.json tsconfig.build.json ./
COPY p4runtime p4runtime
COPY contract contract
COPY p4runtime-controller p4runtime-controller
COPY exporter exporter
COPY switch switch
COPY traffic traffic
COPY app app
COPY bin bin
COPY p4/build p4/build
RUN npm ci --no-audit --no-fund && npm prune --omit=dev
ENTRYPOINT ["node", "dist/bin/rdma-telemetry.js"]
