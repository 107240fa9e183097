FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends build-essential cmake postgresql-client gettext && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml ./
COPY requirements requirements
COPY agentlab agentlab
COPY runs runs
COPY tracing tracing
# llama.cpp for any x86-64 with AVX2: a native build crashes on some CPUs (see Makefile).
ENV CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
# At the versions of the lock every machine installs (make lock).
RUN pip install --no-cache-dir -c requirements/test.lock -e ".[local]"
COPY . .
ENV PYTHONUNBUFFERED=1
# Static files for whitenoise, compressed at build time. The settings refuse to
# load without a key; this one exists only for this build step.
RUN SECRET_KEY=build-only-collectstatic-key-never-served-0123456789 python manage.py collectstatic --noinput \
 && SECRET_KEY=build-only-collectstatic-key-never-served-0123456789 python manage.py compilemessages --ignore .venv -v 0
