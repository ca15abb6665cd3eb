"""The HTTP edge: app factory, middleware, and the /api/v1 router."""
