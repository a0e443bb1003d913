"""Leung's Cplant allocation along processor orderings (curves) and its locality measures."""
