"""What applications import to use a running router: the tool search of the LLM APIs
(`llm_search`).
"""
