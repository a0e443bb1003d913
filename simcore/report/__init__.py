"""What a sweep's results become: tables, figures, the reproduction report, archives."""
