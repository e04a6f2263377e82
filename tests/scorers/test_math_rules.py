"""The named rules of docs/grading.md added in issue 38, one group per class, with answers
that must stay wrong beside the ones that must be right."""

from __future__ import annotations

import pytest

from skyeval.scorers.math import equivalent, extract_math_answer, score_math

MINERVA_QUESTION = (
    "Preamble: ...\n\nSubproblem 0: Find the rate.\n\nSolution: ... $\\boxed{4}$.\n\n"
    "Final answer: The final answer is 4. I hope it is correct.\n\nSubproblem 1: What is the time?"
)


def graded(generation: str, gold, **kwargs) -> float:
    """The score with a generous time limit: these tests check verdicts, never speed."""
    return score_math(generation, gold, timeout_s=60, **kwargs)["score"]


# --- invented-part, asked-part: the answer to the asked question, not an invented continuation


@pytest.mark.parametrize(
    ("generation", "gold", "right"),
    [
        ("The answer is $\\boxed{5}$.\n\nPart 2: Now find y.\nSo $y = 7$, $\\boxed{7}$", "5", True),
        ("The answer is $\\boxed{5}$.\n\n**Part (b):** find y. $\\boxed{7}$", "5", True),
        ("The answer is $\\boxed{5}$.\n\nProblem 2: Now find y. $\\boxed{7}$", "7", False),  # invented box, only right number
        ("The answer is $\\boxed{5}$. Wait, it should be 7: $\\boxed{7}$", "7", True),  # a real correction
    ],
)
def test_invented_part(generation, gold, right):
    assert graded(generation, gold) == float(right)


@pytest.mark.parametrize(
    ("generation", "gold", "right"),
    [
        # answers k=1, then invents subproblem 2 with its own box
        ("The time is $\\boxed{3}$ s.\n\nSubproblem 2: What is the speed?\n\nSolution: $\\boxed{8}$.", "3", True),
        ("The time is $\\boxed{3}$ s.\n\nSubproblem 2: What is the speed?\n\nSolution: $\\boxed{8}$.", "8", False),
        # restates subproblem 0, then answers subproblem 1 under its heading, then invents 2
        ("Subproblem 0: ... $\\boxed{4}$.\n\nSubproblem 1: What is the time?\nIt is $\\boxed{3}$.\n\n"
         "Subproblem 2: speed? $\\boxed{8}$", "3", True),
        ("Subproblem 0: ... $\\boxed{4}$.\n\nSubproblem 1: What is the time?\nIt is $\\boxed{3}$.\n\n"
         "Subproblem 2: speed? $\\boxed{8}$", "4", False),
    ],
)
def test_asked_subproblem(generation, gold, right):
    assert graded(generation, gold, question=MINERVA_QUESTION) == float(right)


# --- units, words, formatting


@pytest.mark.parametrize(
    ("generation", "gold", "right"),
    [
        (r"$\boxed{4 \times 10^{33} \, \text{erg s}^{-1}}$", "4e33", True),
        (r"$\boxed{4 \times 10^{33} \, \text{erg s}^{-1}}$", "5e33", False),
        (r"$\boxed{3.75 \text{ hours}}$", "3.75", True),
        ("So the total is **194**", "194", True),
        ("So the total is **194**", "19", False),
        ("Therefore, the zookeeper needs to order 1400 bananas.", "1400", True),
        ("The wavelength is 4.569 x 10^-24 meters.", "4.569e-24", True),
        ("The wavelength is 4.569 x 10^-24 meters.", "4.569e-23", False),
        ("The area is 7π.", r"7\pi", True),
        ("The area is 7π.", "7", False),
    ],
)
def test_units_and_formatting(generation, gold, right):
    assert graded(generation, gold) == float(right)


# --- fallback-whole-expression: no box, the whole final expression or nothing


@pytest.mark.parametrize(
    ("generation", "expected"),
    [
        (r"The probability is $1 - \frac{1}{\mathrm{e}}$.", r"1 - \frac{1}{\mathrm{e}}"),
        (r"So $\begin{pmatrix} 4 \\ 5 \end{pmatrix}$.", r"\begin{pmatrix} 4 \\ 5 \end{pmatrix}"),
        (r"The answer simplifies to $10\sqrt{3} + \sqrt4$.", r"10\sqrt{3} + \sqrt4"),
        ("The line is $y = -2x$.", "y = -2x"),
        ("The area is 7π.", r"7\pi"),
        ("The solutions are 1, 2.", "1, 2"),
        ("So the total is **194**", "194"),
        ("we get $x = 2 + 3 = 5$ in the end", "5"),
        ("So, the magnitude of $z^2$ is 4.", "4"),
        ("It will take 2 months. The total cost is a lot.", None),
        ("Let us think about it.", None),
    ],
)
def test_fallback_takes_a_whole_expression(generation, expected):
    assert extract_math_answer(generation) == expected
    result = score_math(generation, "3")
    assert result["answer_source"] == ("fallback" if expected else None)


@pytest.mark.parametrize(
    ("generation", "gold", "right"),
    [
        (r"The probability is $1 - \frac{1}{\mathrm{e}}$.", r"1 - \frac{1}{\mathrm{e}}", True),
        (r"The probability is $1 - \frac{1}{\mathrm{e}}$.", "1", False),
        (r"So $\begin{pmatrix} 4 \\ 5 \end{pmatrix}$.", r"\begin{pmatrix} 4 \\ 5 \end{pmatrix}", True),
        (r"So $\begin{pmatrix} 4 \\ 5 \end{pmatrix}$.", "4", False),
        (r"The answer simplifies to $10\sqrt{3} + \sqrt4$.", "10", False),
        ("The line is $y = -2x$.", "-2", False),
        ("The line is $y = -2x$.", "-2x", True),
        ("The solutions are 1, 2.", "2", False),
        ("It will take 2 months. The total cost is a lot.", "2", False),
        (r"so the answer is $(x+1)^2$", "x^2+2x+1", True),
        (r"we get $\tfrac83$", r"\frac{8}{3}", True),
        (r"we get $\frac34i$", r"\frac{3}{4}i", True),
        (r"we get $\left(x-2\right)\left(x+2\right)$", "(x-2)(x+2)", True),
        ("The value of $(26^2 - 24^2 - 10)^2 - 10^2$ is 0.", "8000", False),  # the stated value counts
    ],
)
def test_fallback_grades(generation, gold, right):
    assert graded(generation, gold) == float(right)


# --- equivalence


@pytest.mark.parametrize(
    ("answer", "gold", "right"),
    [
        (r"\frac{1-i}{4}e^{2it}", r"\frac{e^{2it}}{2+2i}", True),
        (r"\frac{1+i}{4}e^{2it}", r"\frac{e^{2it}}{2+2i}", False),
        (r"c_2 e^{-t} + c_1 e^{t}", r"C_1 e^{t} + C_2 e^{-t}", True),
        (r"A e^{t} + B e^{-t}", r"C_1 e^{t} + C_2 e^{-t}", True),
        (r"A e^{t} + B e^{t}", r"C_1 e^{t} + C_2 e^{-t}", False),
        ("a + 2b", "b + 2a", False),  # letters are not arbitrary constants
        (r"y = 1 - x", r"x + y = 1", True),
        (r"p(s)=s^2+\omega^2", r"s^2+\omega^2", True),
        (r"E_1, E_2", r"E_{1},E_{2}", True),
        (r"E_1, E_3", r"E_{1},E_{2}", False),
        (r"e^{2}", r"\mathrm{e}^2", True),
        (r"\left\lfloor \frac{n}{2} \right\rfloor", r"\lfloor\sqrt{n-1}\rfloor", False),
        ("a = -2, b = -2", "-2,-2", True),
        # a function written without its backslash (golds such as college_math's `ln2`, plain-text answers)
        (r"\ln 2", "ln2", True), (r"\ln 3", "ln2", False), ("0.693", "ln2", False), ("ln(2)", r"\ln 2", True),
        ("2sqrt(2)", r"2\sqrt{2}", True), ("1+sqrt(57)/4", r"\frac{1+\sqrt{57}}{4}", False),
        # an equation to solve is no value (college_math cross-wired rows); a definition is
        ("x^{2}-2 x+10=0", "0", False), ("f(0) = 3", "3", True), ("x = 5", "5", True),
        ("19x - 4x + 1 - 81 = 15x - 80", "15x-80", True), (r"\lim_{x \to 0} x^2 = 0", "0", True),  # computations
        (r"\left|\begin{array}{rr}1 & 2 \\ 3 & 4\end{array}\right|=-2", r"\left|\begin{array}{rr}2 & 1 \\ 3 & 4\end{array}\right|=5", False),
    ],
)
def test_equivalence(answer, gold, right):
    assert graded(f"$\\boxed{{{answer}}}$", gold) == float(right)


@pytest.mark.parametrize(
    ("answer", "gold", "right"),
    [
        # answers the release before issue 47 credited (LiveAoPS answer lists): nothing lost
        (r"48+\frac{42}{48}=48.875", "48.875", True),  # a computation ending in the value
        (r"48+\frac{42}{48}=48.875", "48.874", False),
        ("48.875", r"48+\frac{42}{48}=48.875", True),  # a gold computation states its value
        ("48.874", r"48+\frac{42}{48}=48.875", False),
        (r"(x, y, z) = (12, 3, 4), (6, 5.4, 7.6)", r"(12,3,4), \left(6,\frac{27}{5}, \frac{38}{5}\right)", True),
        (r"(12,3,4), \left(6,\frac{27}{5}, \frac{38}{5}\right)", r"(x, y, z) = (12, 3, 4), (6, 5.4, 7.6)", True),
        (r"(x, y, z) = (12, 3, 4), (6, 5.4, 7.5)", r"(12,3,4), \left(6,\frac{27}{5}, \frac{38}{5}\right)", False),
        (r"\frac{\sum_{k=1}^{p-1} {k^n} - \frac{p(p-1)}{2}}{p}", r"\frac{\sum_{k=1}^{p-1} k^n - \frac{p(p-1)}{2}}{p}", True),
        (r"(2-\sqrt[3]{2})^2=0.547", "0.547", True),  # the stated right side is the gold
        (r"(2-\sqrt[3]{2})^2=0.546", "0.547", False),
        (r"(2-\sqrt[3]{2})^2=0.547", r"(2-\sqrt[3]{2})^2", False),  # still no approximation of an exact gold
        ("AB = 0", "0", True),  # a named value (a matrix product), not an equation to solve
        ("AB = 1", "0", False),
        ("x^2-2x+10=0", "0", False),
    ],
)
def test_nothing_lost_from_the_last_release(answer, gold, right):
    assert graded(f"So the answer is $\\boxed{{{answer}}}$.", gold) == float(right)


def test_nothing_lost_through_the_env():
    """The same answers through `score_item`, as the LiveAoPS lists found them."""
    from skyeval import SkyEnvBuilder

    env = SkyEnvBuilder.build("math500", {"timeout_s": 60})
    problem = next(iter(env.iter_problems()))
    for gold, answer in [("48.875", r"48+\frac{42}{48}=48.875"), ("0", "AB = 0"), ("0.547", r"(2-\sqrt[3]{2})^2=0.547")]:
        scored = env.score_item({**problem, "expected": gold, "generation": f"So the answer is $\\boxed{{{answer}}}$."})
        assert (scored["score"], scored["verdict"]) == (1.0, "equal"), (gold, answer, scored)


def test_a_number_in_words_is_an_answer_only_when_no_other_number_follows():
    """Rule spelled-number: "seventy six dollars" states 76; "one chance in six" and "two
    hundred twenty-four point eighty-seven" are prose (no answer: a parse failure the judge
    may see, never a truncated value marked wrong)."""
    assert graded("Counting them all, the answer is seventy six dollars.", "76") == 1.0
    assert graded("So the answer is five apples.", "5") == 1.0
    for text in ("It is one chance in six.", "Both roots are two and three.",
                 "Therefore, the answer (arabic numerals) is two hundred twenty-four point eighty-seven dollars."):
        result = score_math(text, "1", timeout_s=60)
        assert (result["extracted"], result["verdict"]) == (None, "undecided"), text


def test_sets_split_over_boxes_and_hedges():
    assert graded(r"So the roots are $\boxed{1}, \boxed{2}$.", "1, 2") == 1.0
    assert graded(r"So the roots are $\boxed{1}, \boxed{2}, \boxed{3}$.", "1, 2") == 0.0  # an extra root
    assert graded(r"Thus $\boxed{2, 3}$", "2") == 0.0  # an extra root
    assert graded(r"The answer is $\boxed{2}$ or $\boxed{3}$", "3") == 0.0  # a hedge
    assert graded(r"The answer is $\boxed{2}$ or $\boxed{3}$", "2") == 0.0
    assert graded(r"The answer is $\boxed{\frac{1}{2}}$ or $\boxed{0.5}$", "0.5") == 1.0  # one value, two forms


def test_equivalent_keeps_its_contract():
    # a generous limit: the check is the verdict, not the speed (the machine may be loaded)
    assert equivalent(r"\frac{1-i}{4}e^{2it}", r"\frac{e^{2it}}{2+2i}", timeout_s=60)
    assert not equivalent("85.71", "600/7", timeout_s=60)


# --- precision


@pytest.mark.parametrize(
    ("answer", "gold", "right"),
    [
        ("20.385", "20.39", True),
        ("20.38", "20.39", False),
        (r"2.78 \times 10^{-6}", r"2.7778 \times 10^{-6}", True),  # less precise, 3 significant digits
        (r"2.8 \times 10^{-6}", r"2.7778 \times 10^{-6}", False),  # only 2
        ("6626.1", "6630", True),  # an integer gold's trailing zero is not significant
        ("6626", "6630", False),  # integer against integer is exact
        ("4098", "4100", False),
        ("85.71", "600/7", False),  # a rounded decimal never equals an exact gold
        ("2.83", r"2\sqrt{2}", False),
        ("7.0001", "7", False),
        ("44241339", "4.4e7", True),
        (r"4.45 \times 10^{33}", "4.5e33", True),
        (r"4.1 \times 10^{33}", "4e33", False),
    ],
)
def test_precision(answer, gold, right):
    """The `precision` rule is the `approximate` numeric rule's (Minerva, OlympiadBench physics)."""
    assert graded(f"$\\boxed{{{answer}}}$", gold, numeric_rule="approximate") == float(right)


# --- empty-box-loop


def test_empty_boxes_after_a_stated_answer():
    assert graded(r"The answer is 7. \boxed{}\boxed{}\boxed{}", "7") == 1.0
    assert graded(r"The answer is 7. \boxed{}\boxed{}\boxed{}", "8") == 0.0
    assert score_math(r"Put your answer in \boxed{}", "7")["parse_error"] == "empty \\boxed{}"  # one empty box: no answer


# --- stated-precision: the precision the question asks for


@pytest.mark.parametrize(
    ("answer", "gold", "asks", "right"),
    [
        ("99.95", "99.9", "Give your answer to three significant figures.", False),
        ("99.94", "99.9", "Give your answer to three significant figures.", True),
        (r"7.35 \times 10^{14}", "7.353e14", r"Please format your answer as $n \times 10^x$, where $n$ is to 3 decimal places.", False),
        (r"7.353 \times 10^{14}", "7.353e14", r"Please format your answer as $n \times 10^x$, where $n$ is to 3 decimal places.", True),
        (r"4.45 \times 10^{33}", "4.5e33", "Give your answer to two significant figures.", True),
        ("0.5", "0.53", "What is the ratio (to 2 decimal places)?", False),
        ("0.534", "0.53", "What is the ratio (to 2 decimal places)?", True),
        ("56", "56", "How much was consumed (to 1 decimal place)?", True),  # the gold itself does not meet it: not applied
    ],
)
def test_stated_precision(answer, gold, asks, right):
    question = f"Subproblem 0: ...\n\nSubproblem 1: {asks}"
    assert graded(f"$\\boxed{{{answer}}}$", gold, question=question) == float(right)


def test_a_proofs_own_parts_are_not_invented():
    """OlympiadBench solutions have "Part I." / "Part II." sections before their final box."""
    generation = ("Part I. Let us first define $n$ rules; the answer is $n$ at least.\n\n"
                  "Part II. Now we prove there is no other way.\n\nThe final answer is $\\boxed{100}$.")
    assert graded(generation, "100") == 1.0


def test_decimal_places_of_a_tiny_scientific_gold_are_its_mantissas():
    """Minerva: "rounding your answer to three decimal places" for 1.325e-27 kg m/s. Rounded
    to 3 decimals both 1.325e-27 and 6.666e-9 are 0.000: that must not make them equal."""
    question = "Subproblem 1: Express your answer in kilogram meters per second, rounding your answer to three decimal places."
    assert graded(r"$\boxed{6.666 \times 10^{-9} \, \text{kg} \cdot \text{m/s}}$", "1.325e-27", question=question) == 0.0
    assert graded(r"$\boxed{1.323 \times 10^{-27} \mathrm{~kg} \cdot \mathrm{m} / \mathrm{s}}$", "1.325e-27", question=question) == 0.0
    assert graded(r"$\boxed{1.325 \times 10^{-27}}$", "1.325e-27", question=question) == 1.0
    assert graded(r"$\boxed{1.3252 \times 10^{-27}}$", "1.325e-27", question=question) == 1.0


def test_an_equation_whose_side_is_a_set_is_graded_not_raised():
    # liveaops lists `x = \{-2, 0\}`-style answers; sympy cannot subtract a set from a symbol
    assert equivalent(r"x = \{-2, 0\}", r"x = \{-2, 0\}")
    assert not equivalent(r"x = \{-2, 0, -\sqrt{7/2}, \sqrt{7/2}\}", r"x = \{-2, 0\}")


# --- issue 47: whole-output, prose-is-no-answer, hedge, defining-equation, conditions, computed-value


@pytest.mark.parametrize(
    ("generation", "gold"),
    [  # the whole output is the answer when it is one expression, with or without `$`
        (r"$\frac13 $", r"\frac{1}{3}"), (r"$\sqrt3 $", r"\sqrt{3}"), (r"$\dfrac{1}{3} $", r"\frac13"),
        (".4", "0.4"), (r"10\%", "10"), (r"10\text{ units}", "10"), (r"$5 \geq x$", r"x \leq 5"),
        ("The identity matrix is $\\begin{pmatrix}1&0\\\\\n0&1\\end{pmatrix}$", r"\begin{pmatrix}1&0\\0&1\end{pmatrix}"),
        (r"$p=-1,p=\frac{15}{8}$", r"-1,\frac{15}{8}"),
        (r"\tfrac83", r"\frac83"), (r"\frac13", r"\frac13"), (r"\frac34i", r"\frac34i"), (r"2\sqrt{2}", r"2\sqrt2"),
        ("(x+1)^2", "(x+1)^2"), (r"\left(x-2\right)\left(x+2\right)", "(x-2)(x+2)"),
        ("\n\n86", "86"), ("30%.", "30"), ("#### 1,234", "1234"), ("**42**", "42"), ("D.", "D"),
        ("1,000 - (50 x 2 x 7) = 100", "100"),  # an arithmetic of numbers: its value (rule computed-value)
    ],
)
def test_whole_output(generation, gold):
    result = score_math(generation, gold, timeout_s=60)
    assert result["score"] == 1.0 and result["answer_source"] == "fallback", result


@pytest.mark.parametrize(
    ("generation", "gold"),
    [  # ... and only then: a different value, or words around it
        (r"\frac14", r"\frac13"), ("8n^2 + 4n + 1", "1"), ("2x + 3", "3"), (r"2\sqrt{2}", "2"),
        ("It will take 3 months.", "2"),
    ],
)
def test_whole_output_must_still_be_right(generation, gold):
    assert graded(generation, gold) == 0.0


@pytest.mark.parametrize(
    ("generation", "gold"),
    [  # words are never an answer; the search goes on to the answer before, or finds none
        ("**Final Answer**", "2"), ("**Final Answers**", "2"), ("The answer is highlighted.", "2"),
        ("The final answer is boxed as requested.", "2"), (r"12^{\mathrm{th}}\text{ grade}", "12"),
        ("The limit is greater than 1.\nThe answer is (d) none of the above.", "1"),
        (r"The answer is 2}^\infty \frac{F_{n+1}}{F", "2"),
    ],
)
def test_prose_is_no_answer(generation, gold):
    result = score_math(generation, gold, timeout_s=60)
    assert result["score"] == 0.0 and result["parse_error"] == "no answer found", result


@pytest.mark.parametrize(
    ("generation", "gold"),
    [
        ("So $x = 7$.\n\nThe answer is highlighted above.", "7"),  # a remark after the answer
        ("**Final Answer**\n\n$42$", "42"),  # a heading, then the answer
        ("The answer is False (no aliasing occurs).", "False"),  # side text after a text answer
        ("The answer is 18 dollars.", "18"),
        ("Bob will need to spend $14.00 to buy them.\nThe answer is: Bob will need to spend $14.00 to buy them.", "14"),
        # a prompt echo "Answer: <a sentence about a formula>" is no answer, and no number is cut out of the
        # formula: the box at the end is the answer
        ("Question: Solve $0<x<7$.\nAnswer: We need to solve the inequality \\(0 < x + 1 < 7\\).\n\n"
         "### Part 1: \\(0 < x + 1\\)\n\nSo the final answer is:\n\\[\n\\boxed{(-1, 6)}\n\\]", "(-1, 6)"),
    ],
)
def test_prose_around_an_answer_leaves_it_standing(generation, gold):
    assert graded(generation, gold) == 1.0


@pytest.mark.parametrize(
    ("generation", "gold"),
    [  # a hedge is never credited, wherever it stands (the corpus: tests/scorers/math_hacks.py)
        ("The final answer is $x = 9$ or $x = 11$.", "9"), ("The final answer is $x = 11$ or $x = 9$.", "9"),
        ("The answer is either 9 or 11.", "9"), ("The answer is 9, 10 or 11.", "10"), ("$11$ or $9$", "9"),
        ("x = 11 or x = 9", "9"), (r"\boxed{9, 11}", "9"), (r"\boxed{\{9, 11\}}", "9"), (r"\boxed{9 \pm 1}", "10"),
        (r"\boxed{9 \text{ or } 11}", "9"), (r"The answer is $\boxed{11}$ or $\boxed{9}$.", "9"),
        (r"So \boxed{11}. Alternatively, the answer could be \boxed{9}.", "9"),
        ("The answer is \\boxed{9}.\n\n11", "9"), ("The answer is \\boxed{11}.\n\nFinal answer: 9", "9"),
        ("The answer is between 8 and 10.", "9"), ("The answer is 8 to 10.", "9"), ("8–10", "9"),
        (r"\boxed{[8, 10]}", "9"), (r"\boxed{(8, 10)}", "9"), (r"\boxed{8 \le x \le 10}", "9"), ("$x > 3$", "4"),
        ("The answer is -6--2.", "-4"),
    ],
)
def test_hedges_are_never_credited(generation, gold):
    assert graded(generation, gold) == 0.0


@pytest.mark.parametrize(
    ("generation", "gold"),
    [  # one value in several forms, a correction, a set met in any order, a list gold's own values
        (r"The answer is $\boxed{\frac{1}{2}}$ or $\boxed{0.5}$", "0.5"),
        ("The answer is $\\boxed{5}$. Wait, I made a sign error: it is $\\boxed{7}$.", "7"),
        ("\\boxed{4}.\n\nFinal answer: The final answer is 4. I hope it is correct.", "4"),
        (r"\boxed{3, 1}", "1, 3"), (r"The roots are $2$ and $3$.", "2, 3"), (r"\boxed{x = 2 \text{ or } x = 3}", "2, 3"),
        (r"\boxed{(8, 10)}", "(8, 10)"), (r"\boxed{[0, 9)}", "[0, 9)"), (r"\boxed{3 \pm 2\sqrt{2}}", r"3 \pm 2 \sqrt{2}"),
        (r"so $xy=\boxed{25}$." + "\n~MC413551", "25"),  # a signature is no final answer
    ],
)
def test_what_is_no_hedge(generation, gold):
    assert graded(generation, gold) == 1.0


@pytest.mark.parametrize(
    ("generation", "gold", "right"),
    [  # a defining equation is compared by its right side; a trailing condition goes when the gold has none
        (r"$f(t) = \sqrt{2}\cos(2t-\frac{\pi}{4})$", r"\sqrt{2}\cos(2t-\pi/4)", True),
        (r"$v(t) = \frac{t}{m}$", r"\frac{t}{m}", True),
        (r"$x(t) = b\delta(t) + 1 - e^{-at} \text{ for } t > 0$", r"b\delta(t) + 1 - e^{-at}", True),
        (r"\boxed{x(t) = \frac{1}{a} \sinh(at)}", r"\frac{1}{2a}(\exp{a*t}-\exp{-a*t})", True),
        (r"$\frac{1}{x}, x \neq 0$", r"\frac{1}{x}", True),
        (r"$f(t) = 2t, t \ge 0$", "2t", True),
        (r"$2t$", r"f(t) = 2t", True),  # the other way round
        (r"$f(t) = \sqrt{2}\cos(2t+\frac{\pi}{4})$", r"\sqrt{2}\cos(2t-\pi/4)", False),
        (r"$x(t) = b\delta(t) + 1 + e^{-at} \text{ for } t > 0$", r"b\delta(t) + 1 - e^{-at}", False),
        (r"$2x + 3 = 8$", "8", True),  # "x + y = 8" for "find x + y": math-verify reads the value
        (r"$2x + 3 = 8$", "3", False),
    ],
)
def test_defining_equation_and_conditions(generation, gold, right):
    assert graded(generation, gold) == float(right)
