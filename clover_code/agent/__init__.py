"""The agent: the turn loop, sessions and their transcripts, instructions, approvals."""
