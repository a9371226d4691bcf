# The bisector image: `bisector nightly` (and every other command) with git.
#   docker build -t bisector .
#   docker run --rm -v /var/lib/bisector:/var/lib/bisector bisector nightly --config /etc/bisector/nightly.toml
# The sim and local backends and CI history work as they are. The gce and kind
# backends drive kubernetes' own scripts and so also need the Google Cloud SDK,
# kubectl, make and a Go toolchain (or docker) in the image: build on top of this one.
FROM python:3.11-slim

RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/bisector
COPY pyproject.toml README.md ./
COPY bisector ./bisector
RUN pip install --no-cache-dir . \
    && git config --system --add safe.directory '*'

# State (database, hunts' run directories, reports) lives on a volume.
VOLUME ["/var/lib/bisector"]
ENTRYPOINT ["bisector"]
CMD ["--help"]
