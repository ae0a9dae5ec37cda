# GradLab's classroom environment as an image: Debian bookworm, Node 20, Mesa lavapipe from
# bookworm-backports, JupyterLab 4 with the GradLab kernel as the default, the course, a CJK font.
# Usable as the single-user image of Zero to JupyterHub (deploy/z2jh-values.yaml), as a Binder /
# repo2docker environment (uid 1000, the course in $HOME), and with plain `docker run -p 8888:8888`.
#
# The system set-up is CI's own: the image runs .ci/setup (which runs deploy/setup), so its packages,
# driver and Python environments are the ones the test tiers check. GradLab itself is then installed
# from its packed tarball (npm pack), as a user would install a release.
#
#   docker build -t gradlab .
#   docker build --build-arg BASE=my-local-bookworm-node20 --network host -t gradlab .   (no registry)
#   docker run --rm -p 8888:8888 gradlab
ARG BASE=node:20-bookworm-slim
FROM ${BASE}

ARG NB_USER=jovyan
ARG NB_UID=1000
# a directory of the build context with Python wheels for an offline build (deploy/wheels/README.md)
ARG WHEELS=deploy/wheels
# the JupyterHub version of the hub this image will serve (z2jh, BinderHub); empty: Debian's 3.0
ARG JUPYTERHUB_VERSION=

ENV DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8 \
    NB_USER=${NB_USER} \
    NB_UID=${NB_UID} \
    # GPU nodes: the NVIDIA container toolkit mounts the Vulkan ICD only with the graphics capability
    NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics

COPY ${WHEELS} /opt/pypi/files/
COPY . /opt/gradlab/src
WORKDIR /opt/gradlab/src

# .ci/setup builds its JupyterLab venv from wheels on disk; without any, the two venvs are made here
# from PyPI with the same version ranges first (.ci/setup and deploy/setup then find them in place)
RUN set -eux; \
    apt-get update -q; \
    apt-get install -y -q --no-install-recommends python3 python3-venv ca-certificates; \
    if ! ls /opt/pypi/files/jupyterlab-4*.whl >/dev/null 2>&1; then \
      python3 -m venv /opt/gradlab-jupyter; \
      /opt/gradlab-jupyter/bin/pip install --no-cache-dir 'jupyterlab>=4,<5' 'notebook>=7,<8' 'nbconvert>=7'; \
      python3 -m venv /opt/gradlab-classroom/venv; \
      /opt/gradlab-classroom/venv/bin/pip install --no-cache-dir 'jupyterlab>=4,<5'; \
    fi; \
    bash .ci/setup; \
    if [ -n "$JUPYTERHUB_VERSION" ]; then \
      /opt/gradlab-classroom/venv/bin/pip install --no-cache-dir "jupyterhub==$JUPYTERHUB_VERSION"; \
    fi; \
    npm pack --pack-destination /tmp; \
    npm install -g --no-audit --no-fund /tmp/gradlab-*.tgz; \
    gradlab install --prefix /opt/gradlab-classroom/venv; \
    mkdir -p /opt/gradlab/course; \
    cp notebooks/*.ipynb notebooks/check.ts /opt/gradlab/course/; \
    rm -rf /var/lib/apt/lists/* /root/.npm /root/.cache /tmp/gradlab-*.tgz

# Binder wants uid 1000 (the node base image's own user "node" has it) and the content in $HOME;
# Zero to JupyterHub mounts a volume over $HOME, and copies the course in at start (z2jh-values.yaml)
RUN set -eux; \
    if id -u node >/dev/null 2>&1; then userdel --remove node; fi; \
    useradd --create-home --uid "$NB_UID" --shell /bin/bash "$NB_USER"; \
    cp -r /opt/gradlab/course "/home/$NB_USER/course"; \
    chown -R "$NB_USER:$NB_USER" "/home/$NB_USER"

ENV PATH=/opt/gradlab-classroom/venv/bin:${PATH}
USER ${NB_USER}
WORKDIR /home/${NB_USER}
EXPOSE 8888
CMD ["jupyter", "lab", "--ip=0.0.0.0", "--port=8888", "--no-browser", "--ServerApp.root_dir=/home/jovyan/course", "--MappingKernelManager.default_kernel_name=gradlab"]
