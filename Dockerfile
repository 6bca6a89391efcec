# One image for every Trellis process: `trellis api` (default), `trellis worker`, `trellis setup`.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /srv/trellis
COPY pyproject.toml ./
COPY temporal_workflows ./temporal_workflows
COPY activities ./activities
COPY app ./app
RUN pip install .

RUN useradd --create-home --uid 10001 trellis \
    && mkdir -p /var/lib/trellis \
    && chown trellis /var/lib/trellis
USER trellis

ENV TRELLIS_DATA_DIR=/var/lib/trellis \
    TRELLIS_API_HOST=0.0.0.0
EXPOSE 8000
CMD ["trellis", "api"]
