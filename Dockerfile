# A static (musl) tocsin on a distroless base: no shell, no libc, runs as nonroot.
#
#   docker build -t tocsin .
#   docker run -p 8080:8080 -v tocsin-data:/var/lib/tocsin tocsin
#
# Settings come from TOCSIN_* variables (README.md's configuration table) or a file
# mounted at /etc/tocsin/tocsin.toml and named with `--config`. docs/operations.md says more.

FROM rust:1-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/*
RUN rustup target add x86_64-unknown-linux-musl wasm32-wasip2
WORKDIR /src
COPY . .
RUN cargo build --release --locked --target x86_64-unknown-linux-musl -p tocsin \
 && install -D target/x86_64-unknown-linux-musl/release/tocsin /out/usr/bin/tocsin \
 && install -d /out/var/lib/tocsin
# The build compiles the built-in plugins ahead of time only for its own target, not for
# this musl binary: compile them now, into a cache outside the data volume, so a
# container's first start compiles nothing.
RUN TOCSIN_DATA_DIR=/tmp/precompile TOCSIN_PLUGIN_CACHE_DIR=/out/var/cache/tocsin \
    /out/usr/bin/tocsin plugin precompile

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/usr/bin/tocsin /usr/bin/tocsin
COPY --from=build --chown=nonroot:nonroot /out/var/lib/tocsin /var/lib/tocsin
COPY --from=build --chown=nonroot:nonroot /out/var/cache/tocsin /var/cache/tocsin
ENV TOCSIN_LISTEN=0.0.0.0:8080 \
    TOCSIN_DATA_DIR=/var/lib/tocsin \
    TOCSIN_PLUGIN_CACHE_DIR=/var/cache/tocsin
EXPOSE 8080
VOLUME ["/var/lib/tocsin"]
USER nonroot
ENTRYPOINT ["/usr/bin/tocsin"]
CMD ["serve"]
