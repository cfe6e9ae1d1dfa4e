"""Ground truth of Statler's domains: S Prompt 8's disinfection episode ends with exactly its gold
answer's dirty blocks; dirt spreads up and down a stack; weights in a bowl; the cup game."""
from __future__ import annotations

from monologue_domain.kinematic_world import TabletopWorld, world_with
from monologue_domain.statler_truth import DisinfectionTruth, WeightTruth, cup_game, inside, touching


def scene() -> TabletopWorld:
    # S Prompt 8 (l.346-379); the disinfector is the white bowl here
    return world_with([("teal block", (0.35, 0.2, 0.02)), ("black block", (0.45, 0.2, 0.02)),
                       ("cyan block", (0.55, 0.2, 0.02)), ("blue block", (0.65, 0.2, 0.02)),
                       ("tan bowl", (0.4, -0.2, 0.0)), ("white bowl", (0.6, -0.2, 0.0))])


def test_prompt8_episode_ends_with_the_gold_dirty_blocks() -> None:
    w = scene()
    truth = DisinfectionTruth(disinfectors=frozenset({"white bowl"}))
    truth.make_dirty("teal block", "black block")  # 1
    truth.make_clean("cyan block", "blue block")  # 2: the other blocks are clean
    truth.make_dirty("cyan block", "blue block")  # 3: somebody polluted them
    assert w.pick_place("cyan block", "teal block")[0]  # 4
    truth.settle(w)
    # 5: blue and black into the disinfector, side by side (the kinematic primitive places at the bowl's
    # centre, so the second block would land on the first; the paper's simulator puts them side by side)
    w.move_object("blue block", 0.6, -0.222)
    w.move_object("black block", 0.6, -0.178)
    truth.settle(w)
    assert truth.dirty == {"teal block", "cyan block"} and touching(w) == [("cyan block", "teal block")]
    for obj, target in [("blue block", "tan bowl"), ("blue block", "middle"), ("black block", "blue block")]:
        assert w.pick_place(obj, target)[0]  # 6-8
        truth.settle(w)
    # 9: "Put all the dirty blocks on the table" -> gold: the teal and the cyan block (S l.377-379)
    assert truth.dirty == {"teal block", "cyan block"}
    assert sorted(truth.clean_blocks(w)) == ["black block", "blue block"]  # S Prompt 13's writer got this wrong


def test_dirt_spreads_up_and_down_a_stack_but_not_through_bowls() -> None:
    w = scene()
    truth = DisinfectionTruth()
    truth.make_dirty("cyan block")
    w.pick_place("teal block", "tan bowl")
    w.pick_place("black block", "teal block")
    truth.settle(w)
    assert truth.dirty == {"cyan block"}  # clean on clean in a bowl stays clean
    w.pick_place("cyan block", "black block")
    truth.settle(w)
    assert truth.dirty == {"cyan block", "black block", "teal block"}
    assert ("black block", "teal block") in touching(w) and ("cyan block", "black block") in touching(w)
    assert not truth.is_dirty("blue block")


def test_weights_and_the_cup_game() -> None:
    w = scene()
    weights = WeightTruth({"teal block": 2.0, "black block": 1.0, "cyan block": 1.0, "blue block": 4.0})
    w.pick_place("teal block", "tan bowl")
    w.pick_place("black block", "tan bowl")
    assert sorted(inside(w, "tan bowl")) == ["black block", "teal block"]
    assert weights.total_in(w, "tan bowl") == 3.0 and weights.total_in(w, "white bowl") == 0.0
    assert weights.heaviest(["teal block", "blue block"]) == "blue block"
    # S Prompt 3 (l.50-58): [F, T, F], swap 1-2 -> [F, F, T], swap 0-2 -> [T, F, F]
    assert cup_game([False, True, False], [(1, 2), (0, 2)]) == [True, False, False]
