"""Task generators that run offline (the tiny world's synthetic arithmetic task)."""
