FROM python:3.11-slim
WORKDIR /app
# The lock's versions first (./scripts/lock writes it), in a layer of their own that a code change keeps;
# then the project alone, without resolving anything again.
COPY requirements.lock ./
RUN pip install --no-cache-dir -r requirements.lock
COPY pyproject.toml README.md ./
COPY domain domain
COPY service service
COPY api api
RUN pip install --no-cache-dir --no-deps . && useradd --system zametano \
    && mkdir -p /var/lib/zametano && chown zametano /var/lib/zametano && chmod 700 /var/lib/zametano
# The signing key (made on first start) and the keyring live here: mount a volume to keep them.
ENV ZAMETANO_DATA_DIR=/var/lib/zametano
USER zametano
EXPOSE 8000
# Tables are created once by the gunicorn master (on_starting) before the workers fork.
CMD ["gunicorn", "-c", "python:api.gunicorn_conf", "api.app:create_app()"]
