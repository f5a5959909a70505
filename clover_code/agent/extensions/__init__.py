"""What users and projects add to the agent: hooks, skills, custom commands, agent
definitions and the ``task`` tool's subagents, with the check every host program
passes before it runs (``host_programs``) and asking again when a trusted script
changed (``script_retrust``).
"""
