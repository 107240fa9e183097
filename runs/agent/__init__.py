"""The ReAct agent: loop, tools, simulated model and built-in task suite.

Django-free on purpose (DESIGN.md section 3): the Celery task wires the loop's
sink to the recorder; tests and ``python -m runs.agent.sim_server`` use it bare.
"""
