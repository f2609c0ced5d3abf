"""The OpenAPI document: schema fragments (data) and the document built from the route table."""
