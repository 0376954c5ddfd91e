"""The load kind's report: its sections as the report model (`sections.py`), the witnesses'
lines, the figures and listings, a replay's timeline."""
