"""Recipe scripts (`python -m recipes.<method>`) and the small core they share (`recipes.common`)."""
