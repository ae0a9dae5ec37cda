# GradLab's classroom environment as an image: Debian bookworm, Node 20, Mesa lavapipe from
# bookworm-backports, JupyterLab 4 with the GradLab kernel as the only kernel, the course, a CJK font.
# Usable as the single-user image of Zero to JupyterHub (deploy/z2jh-values.yaml), as a Binder /
# repo2docker environment (uid 1000, the course in $HOME), and with plain `docker run -p 8888:8888`.
#
# Two stages: `build` packs GradLab with its devDependencies (tsc) from this checkout; `runtime` holds
# only what a student's server runs: the packed GradLab installed with its runtime dependencies, one
# JupyterLab venv, Mesa, a font, tini. None of the test tiers (Chromium, the browser tier's venv,
# Debian's JupyterHub and jupyter_client stack, devDependencies) is in it.
#
#   docker build -t gradlab .            (or: podman build -t gradlab .)
#   docker build --build-arg BASE=my-local-bookworm-node20 --network host -t gradlab .   (no registry)
#   docker run --rm -p 8888:8888 gradlab
ARG BASE=node:20-bookworm-slim

# ---- build: npm ci (with devDependencies), the type-checked build, npm pack ------------------------
FROM ${BASE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY . .
RUN set -eux; \
    # npm 11 does not make --pack-destination itself
    mkdir -p /out/course; \
    npm pack --pack-destination /out; \
    cp notebooks/*.ipynb notebooks/check.ts /out/course/

# ---- runtime ---------------------------------------------------------------------------------------
FROM ${BASE} AS runtime
ARG NB_USER=jovyan
ARG NB_UID=1000
# a directory of the build context with Python wheels for an offline build (deploy/wheels/README.md)
ARG WHEELS=deploy/wheels
# the JupyterHub version of the hub this image will serve (z2jh, BinderHub); empty: none (plain
# `docker run` / Binder do not need jupyterhub-singleuser)
ARG JUPYTERHUB_VERSION=
# where the course lives in the image; copied into the student's home at start (z2jh-values.yaml)
ARG COURSE_DIR=/opt/gradlab/course

ENV DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8 \
    NB_USER=${NB_USER} \
    NB_UID=${NB_UID} \
    GRADLAB_COURSE_DIR=${COURSE_DIR} \
    VENV=/opt/gradlab-classroom/venv \
    # GPU nodes: the NVIDIA container toolkit mounts the Vulkan ICD only with the graphics capability
    NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics

# Mesa lavapipe >= 24 (Dawn rejects bookworm's 22) from bookworm-backports, the GLES fallback, Python
# for JupyterLab, a CJK font (the course's lab strings are Chinese), tini as PID 1
RUN set -eux; \
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      > /etc/apt/sources.list.d/backports.sources; \
    apt-get update -q; \
    apt-get install -y -q --no-install-recommends -t bookworm-backports mesa-vulkan-drivers libvulkan1; \
    apt-get install -y -q --no-install-recommends libegl1 libgles2 libegl-mesa0 \
      python3 python3-venv ca-certificates fonts-wqy-zenhei tini; \
    rm -rf /var/lib/apt/lists/*

COPY ${WHEELS} /tmp/wheels/
RUN set -eux; \
    python3 -m venv "$VENV"; \
    if ls /tmp/wheels/jupyterlab-4*.whl >/dev/null 2>&1; then \
      "$VENV/bin/pip" install --no-cache-dir --no-index --find-links /tmp/wheels 'jupyterlab>=4,<5'; \
    else \
      "$VENV/bin/pip" install --no-cache-dir 'jupyterlab>=4,<5'; \
    fi; \
    if [ -n "$JUPYTERHUB_VERSION" ]; then "$VENV/bin/pip" install --no-cache-dir "jupyterhub==$JUPYTERHUB_VERSION"; fi; \
    # the venv's own ipykernel kernelspec is JupyterLab's dependency, not part of the course
    rm -rf "$VENV/share/jupyter/kernels/python3"; \
    rm -rf /tmp/wheels /root/.cache

COPY --from=build /out/ /tmp/gradlab/
# kernels on Unix sockets in the user's runtime directory, only the GradLab kernel, per-kernel culling
COPY deploy/jupyter_server_config.json /opt/gradlab-classroom/venv/etc/jupyter/jupyter_server_config.json
RUN set -eux; \
    npm install -g --omit=dev --no-audit --no-fund /tmp/gradlab/gradlab-*.tgz; \
    gradlab install --prefix "$VENV"; \
    mkdir -p "$(dirname "$GRADLAB_COURSE_DIR")"; \
    cp -r /tmp/gradlab/course "$GRADLAB_COURSE_DIR"; \
    rm -rf /tmp/gradlab /root/.npm

# Binder wants uid 1000 (the node base image's own user "node" has it) and the content in $HOME;
# Zero to JupyterHub mounts a volume over $HOME, and copies the course in at start (z2jh-values.yaml)
RUN set -eux; \
    if id -u node >/dev/null 2>&1; then userdel --remove node; fi; \
    useradd --create-home --uid "$NB_UID" --shell /bin/bash "$NB_USER"; \
    cp -r "$GRADLAB_COURSE_DIR" "/home/$NB_USER/course"; \
    chown -R "$NB_USER:$NB_USER" "/home/$NB_USER"

ENV PATH=/opt/gradlab-classroom/venv/bin:${PATH}
USER ${NB_USER}
WORKDIR /home/${NB_USER}
EXPOSE 8888
# tini reaps what the kernel leaves (its SIGINT helper, language-service workers' children) and passes
# SIGTERM on, so `docker stop` ends the server, which shuts its kernels down
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["sh", "-c", "exec jupyter lab --ip=0.0.0.0 --port=8888 --no-browser --ServerApp.root_dir=\"$HOME/course\""]
