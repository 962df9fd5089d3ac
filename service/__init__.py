"""The service layer: the eventsourcing Application, its queries, and persistence configuration."""
