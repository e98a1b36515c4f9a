"""Human-facing app: pages, forms and the live-view consumer."""
