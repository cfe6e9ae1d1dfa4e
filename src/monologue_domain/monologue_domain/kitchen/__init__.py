"""The symbolic kitchen / household world of SayCan (SC §3.4), IM §4.3 and CAPE (no rclpy).

- `state.KitchenState`: the observable state (what goal predicates read);
- `world.KitchenWorld`: SayCan's kitchen with preconditions, affordances and disturbances;
- `skills`: skill names, SayCan texts and CAPE precondition errors;
- `scene`: the world as scene objects (ground truth) and back;
- `judge`: success of a kitchen skill from the state after it.
"""
