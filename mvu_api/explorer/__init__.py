"""The API explorer: a page of ``mvu serve`` that lists the OpenAPI document's operations and sends them."""
