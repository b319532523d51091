# vx in a container: the image vx watch and CI jobs use (docs/packaging.md).
# 'make image' builds it (docker build -t vx:VERSION .), passing the commit.
#
# The build stage builds the Debian package (make deb); the runtime stage,
# on debian:12-slim, installs that package with apt, which brings exactly the
# runtime libraries it declares, and runs as the user vx.

# The base is pinned by digest (debian:12-slim's of 2026-08-25, the newest seen then), so a
# rebuild gets the same bytes; the release recipe fails when the tag has moved on, and the
# digest is then updated here and in examples/watch/Dockerfile (docs/packaging.md).
FROM debian:12-slim@sha256:88200866dfff7ea7f5cbcb6ec7c8a701889efe6fe859fe64d6990e4b07ea4171 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential pkg-config \
      libcurl4-openssl-dev libyaml-dev libcjson-dev libssl-dev libgit2-dev \
      git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The context holds no .git (.dockerignore): make image passes the commit.
ARG VX_COMMIT=unknown
ARG SOURCE_DATE_EPOCH=0
RUN make clean \
 && make deb VX_COMMIT="$VX_COMMIT" SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" \
 && cp build/vx_*.deb /vx.deb

FROM debian:12-slim@sha256:88200866dfff7ea7f5cbcb6ec7c8a701889efe6fe859fe64d6990e4b07ea4171
COPY --from=build /vx.deb /tmp/vx.deb
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      /tmp/vx.deb ca-certificates libcurl3-gnutls libexpat1 libpcre2-8-0 zlib1g \
 && rm -rf /var/lib/apt/lists/* /tmp/vx.deb \
 && useradd --system --uid 10001 --user-group --home-dir /home/vx --create-home \
      --shell /usr/sbin/nologin vx
# git without Debian's git package, whose perl (about 47 MB) would take the
# image past 100 MB: the git binary (clone, fetch, push, commit are built in)
# and its https transport, on the libraries installed above. vx itself needs
# no git binary (libgit2); it is for the scripts of CI jobs run in the image.
COPY --from=build /usr/bin/git /usr/bin/git
COPY --from=build /usr/lib/git-core/git-remote-http /usr/lib/git-core/git-remote-http
COPY --from=build /usr/share/git-core/templates /usr/share/git-core/templates
RUN ln -s git-remote-http /usr/lib/git-core/git-remote-https \
 && git --version \
 && vx version
USER vx:vx
WORKDIR /home/vx
ENTRYPOINT ["vx"]
CMD ["help"]
