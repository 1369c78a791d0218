# The sandbox image: where candidate code is searched, patched and tested.
# Built by repair_agent/sandbox/image.py with this file as the ONLY build context.
# BASE_IMAGE is swapped for a locally built Debian base (debootstrap + docker import)
# when no registry is reachable.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}

LABEL org.repair-agent.role=sandbox

# One layer (each step costs seconds on slow storage drivers):
# - python3 + pytest run tests, git diffs and applies, timeout/grep/sed serve the tools;
#   pytest-timeout fails one hanging test alone; faketime runs the verifier's held-out probe
#   again on a shifted clock (a fix that is right only before some date is caught);
#   the network is touched only when something is missing, so a prepared base builds offline;
# - the workspace is bind-mounted and owned by another uid: git must not refuse it;
# - /workspace is the agent sandbox's mount point; uid 10001 is the non-root user.
RUN if ! (command -v python3 && python3 -c 'import pytest, pytest_timeout' && command -v git \
          && command -v timeout && command -v grep && command -v sed && command -v faketime) >/dev/null 2>&1; then \
        apt-get update \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
           python3 python3-pytest python3-pytest-timeout faketime git coreutils grep sed \
           $(apt-cache show python3-distutils >/dev/null 2>&1 && echo python3-distutils) \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && git config --system --add safe.directory '*' \
    && mkdir -p /workspace && chown 10001:10001 /workspace \
    && if command -v useradd >/dev/null 2>&1; then \
        groupadd -g 10001 agent && useradd -u 10001 -g 10001 -M -d /tmp -s /bin/sh agent; \
    fi

# A writable HOME for a uid without one, UTF-8 without locales. Nothing else: the verifier's
# checks run Python as a user's `python -m pytest` would (default bytecode and buffering), so no
# setting of the image is a constant a candidate could test for; the agent's sandbox asks for
# what it wants (no .pyc litter) in its own commands.
ENV HOME=/tmp LANG=C.UTF-8

# Never run candidate code as root.
USER 10001:10001
WORKDIR /workspace
