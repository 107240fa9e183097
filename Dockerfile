FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends build-essential cmake postgresql-client && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml ./
COPY agentlab agentlab
COPY runs runs
COPY tracing tracing
RUN pip install --no-cache-dir -e ".[local]"
COPY . .
ENV PYTHONUNBUFFERED=1
# Static files for whitenoise, compressed at build time. The settings refuse to
# load without a key; this one exists only for this build step.
RUN SECRET_KEY=build-only-collectstatic-key-never-served-0123456789 python manage.py collectstatic --noinput
