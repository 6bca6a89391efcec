"""What the routes call: the API's use cases over the store, the catalog and Temporal."""
