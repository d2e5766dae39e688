"""Back-office reports for shop staff."""
