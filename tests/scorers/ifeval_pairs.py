"""(prompt, response) pairs of our own making for IFEval: the agreement test with
lm-evaluation-harness's checker, and the compliance self-check.

For every IFEval prompt, responses are composed from the texts below by transforms, one
per instruction, each made either to follow its instruction or to break it, often at the
boundary (exactly N words, N - 1 ...). Some responses get a chatty first line or a
decorated last line, or markdown asterisks, so that strict and loose verdicts differ.
`EDGE_CASES` are written by hand for what the rules read most finely (abbreviations in
sentence counts, contractions in capital words, postscript spellings, JSON fences ...).
Everything is seeded: the same pairs on every machine.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any, Callable, Iterator

ENGLISH = [
    "Dr. Smith moved to Washington D.C. in 2019. She works on the U.S. budget, e.g. the 3.5 percent growth "
    "forecast. Her team meets at 9 a.m. every Monday.",
    "The river rose quickly after the storm. Farmers moved their cattle to higher ground, and the village "
    "opened its school as a shelter. By evening the water had reached the old bridge.",
    "Learning a language takes patience. You listen, you repeat, you make mistakes. Then one day a whole "
    "sentence comes out right, and it feels like magic!",
    "Why do cats sleep so much? They save energy for hunting. Even a well-fed house cat keeps the habits of "
    "its wild ancestors, doesn't it?",
    "The committee reviewed three proposals: a new park, a bike lane, and a library annex. After a long "
    "debate, Mr. Alvarez said the library was the best choice. Everyone agreed.",
    "Our trip started in Lisbon. We took the night train to Madrid, then a bus to Valencia. The food was "
    "great... the weather, not so much.",
]
EXTRA_SENTENCES = [
    "The sun set behind the hills.", "It was a quiet evening.", "Nobody expected the results.",
    "Prices went up by 2.5 percent.", "St. Louis is a city in Missouri.", "He said it was fine.",
    "What happens next is unclear.", "The answer surprised everyone!", "Mrs. Brown baked bread.",
    "The meeting ended at 5 p.m. sharp.", "Data from the U.K. agreed.", "This is simple.",
]
FOREIGN = {
    "de": "Das Wetter ist heute sehr schön. Wir gehen am Nachmittag in den Park und essen ein Eis.",
    "it": "Oggi il tempo è molto bello. Nel pomeriggio andiamo al parco e mangiamo un gelato insieme.",
    "pt": "Hoje o tempo está muito bonito. À tarde vamos ao parque e comemos um sorvete juntos.",
    "fi": "Tänään on todella kaunis sää. Iltapäivällä menemme puistoon ja syömme jäätelöä yhdessä.",
    "vi": "Hôm nay thời tiết rất đẹp. Buổi chiều chúng tôi đi công viên và ăn kem cùng nhau.",
    "sw": "Leo hali ya hewa ni nzuri sana. Mchana tutakwenda kwenye bustani na kula aiskrimu pamoja.",
    "ru": "Сегодня очень хорошая погода. После обеда мы пойдём в парк и будем есть мороженое.",
    "bg": "Днес времето е много хубаво. Следобед ще отидем в парка и ще ядем сладолед заедно.",
    "ar": "الطقس جميل جدا اليوم. في المساء سنذهب إلى الحديقة ونأكل المثلجات معا.",
    "fa": "امروز هوا بسیار خوب است. بعد از ظهر به پارک می رویم و با هم بستنی می خوریم.",
    "ur": "آج موسم بہت اچھا ہے۔ دوپہر کو ہم پارک جائیں گے اور مل کر آئس کریم کھائیں گے۔",
    "hi": "आज मौसम बहुत अच्छा है। दोपहर में हम पार्क जाएंगे और साथ में आइसक्रीम खाएंगे।",
    "mr": "आज हवामान खूप छान आहे. दुपारी आम्ही बागेत जाणार आहोत आणि एकत्र आईस्क्रीम खाणार आहोत.",
    "ne": "आज मौसम धेरै राम्रो छ। दिउँसो हामी पार्कमा जान्छौं र सँगै आइसक्रिम खान्छौं।",
    "bn": "আজ আবহাওয়া খুব সুন্দর। বিকেলে আমরা পার্কে যাব এবং একসাথে আইসক্রিম খাব।",
    "pa": "ਅੱਜ ਮੌਸਮ ਬਹੁਤ ਵਧੀਆ ਹੈ। ਦੁਪਹਿਰ ਨੂੰ ਅਸੀਂ ਪਾਰਕ ਜਾਵਾਂਗੇ ਅਤੇ ਇਕੱਠੇ ਆਈਸਕ੍ਰੀਮ ਖਾਵਾਂਗੇ।",
    "gu": "આજે હવામાન ખૂબ સરસ છે. બપોરે અમે બગીચામાં જઈશું અને સાથે આઈસ્ક્રીમ ખાઈશું.",
    "ta": "இன்று வானிலை மிகவும் நன்றாக உள்ளது. மதியம் நாங்கள் பூங்காவிற்கு சென்று ஐஸ்கிரீம் சாப்பிடுவோம்.",
    "te": "ఈ రోజు వాతావరణం చాలా బాగుంది. మధ్యాహ్నం మేము పార్కుకు వెళ్లి కలిసి ఐస్ క్రీమ్ తింటాము.",
    "kn": "ಇಂದು ಹವಾಮಾನ ತುಂಬಾ ಚೆನ್ನಾಗಿದೆ. ಮಧ್ಯಾಹ್ನ ನಾವು ಉದ್ಯಾನಕ್ಕೆ ಹೋಗಿ ಒಟ್ಟಿಗೆ ಐಸ್ ಕ್ರೀಮ್ ತಿನ್ನುತ್ತೇವೆ.",
    "ko": "오늘 날씨가 정말 좋습니다. 오후에 우리는 공원에 가서 함께 아이스크림을 먹을 것입니다.",
    "th": "วันนี้อากาศดีมาก ตอนบ่ายเราจะไปสวนสาธารณะและกินไอศกรีมด้วยกัน",
}
CAPITAL_WORDS = ["IMPORTANT", "NASA", "DON'T", "WELL-KNOWN", "U.S.", "OK", "I", "NEVER", "A+", "FAQ"]
INTROS = ["Sure! Here is my response:", "Of course, happy to help.", "**Answer**"]
OUTROS = ["**Hope this helps!**", "Let me know if you need anything else.", "*Thanks for reading*"]


class Draft:
    """A response being composed: paragraphs, then what goes before and after them."""

    def __init__(self, paragraphs: list[str]) -> None:
        self.paragraphs = paragraphs
        self.separator = "\n\n"
        self.head: list[str] = []
        self.tail: list[str] = []
        self.finish: list[Callable[[str], str]] = []

    def text(self) -> str:
        body = "\n\n".join([*self.head, self.separator.join(self.paragraphs), *self.tail])
        for step in self.finish:
            body = step(body)
        return body

    def words(self) -> list[str]:
        return re.findall(r"\w+", " ".join(self.paragraphs))

    def edit(self, fn: Callable[[str], str]) -> None:
        self.paragraphs = [fn(p) for p in self.paragraphs]


def _sentences(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(EXTRA_SENTENCES) for _ in range(count))


def _words(rng: random.Random, count: int) -> str:
    pool = " ".join(ENGLISH).replace(".", "").replace(",", "").split()
    return " ".join(rng.choice(pool) for _ in range(count))


def _count(kw: dict, key: str, relation_key: str, comply: bool, rng: random.Random) -> int:
    """A count for a `less than` / `at least` rule: at or around its boundary."""
    threshold, relation = int(kw[key]), kw[relation_key]
    edge = rng.choice([0, 0, 1, 2])
    if relation == "less than":
        return max(threshold - 1 - edge, 0) if comply else threshold + edge
    return threshold + edge if comply else max(threshold - 1 - edge, 0)


def apply(instruction: str, kw: dict, draft: Draft, comply: bool, rng: random.Random, prompt: str) -> None:
    """Make `draft` follow (or break) one instruction."""
    kind = instruction.split(":")[1]
    if kind == "response_language":
        text = FOREIGN.get(kw["language"], FOREIGN["de"]) if comply else ENGLISH[1]
        draft.paragraphs = [text] if comply else [text, ENGLISH[2]]
    elif kind == "number_sentences":
        draft.paragraphs = [_sentences(rng, _count(kw, "num_sentences", "relation", comply, rng))]
    elif kind == "number_words":
        n = _count(kw, "num_words", "relation", comply, rng)
        draft.paragraphs = [_words(rng, n)] if n else [""]
    elif kind == "existence":
        if comply:
            draft.paragraphs.append(" and ".join(kw["keywords"]).capitalize() + " matter here.")
        else:
            word = kw["keywords"][0]
            draft.edit(lambda p: re.sub(re.escape(word), "thing", p, flags=re.I))
            draft.paragraphs.append(" and ".join(kw["keywords"][1:]) + " only.")
    elif kind == "frequency":
        n = _count(kw, "frequency", "relation", comply, rng)
        word = kw["keyword"]
        draft.edit(lambda p: re.sub(re.escape(word), "item", p, flags=re.I))
        draft.paragraphs.append(" ".join([word.upper() if i % 2 else word for i in range(n)]) + ".")
    elif kind == "forbidden_words":
        if comply:
            for word in kw["forbidden_words"]:
                draft.edit(lambda p, w=word: re.sub(rf"\b{re.escape(w)}\b", "stuff", p, flags=re.I))
        else:
            draft.paragraphs.append(f"I will mention {kw['forbidden_words'][-1].title()} once.")
    elif kind == "letter_frequency":
        letter, n = kw["letter"], _count(kw, "let_frequency", "let_relation", comply, rng)
        draft.edit(lambda p: re.sub(re.escape(letter), "", p, flags=re.I))
        draft.paragraphs.append(" ".join(letter.upper() if i % 3 == 0 else letter for i in range(n)))
    elif kind == "number_paragraphs":
        n = int(kw["num_paragraphs"]) + (0 if comply else rng.choice([-1, 1]))
        draft.paragraphs = [rng.choice(ENGLISH) for _ in range(max(n, 1))]
        draft.separator = rng.choice(["\n\n***\n\n", "\n***\n", " *** "])
        if not comply and rng.random() < 0.3:
            draft.paragraphs.insert(1, "")
    elif kind == "nth_paragraph_first_word":
        n, nth, word = int(kw["num_paragraphs"]), int(kw["nth_paragraph"]), kw["first_word"]
        count = n if comply or rng.random() < 0.5 else n + 1
        draft.paragraphs = [rng.choice(ENGLISH) for _ in range(count)]
        start = rng.choice([word, word.capitalize(), f'"{word.capitalize()},', f"{word.upper()}."])
        if comply or count != n:
            draft.paragraphs[nth - 1] = f"{start} {draft.paragraphs[nth - 1]}"
        else:
            draft.paragraphs[nth - 1] = f"Well {word} {draft.paragraphs[nth - 1]}"
    elif kind == "number_placeholders":
        n = int(kw["num_placeholders"]) - (0 if comply else 1)
        draft.paragraphs.append(" ".join(f"[field {i}]" for i in range(n)) or "No placeholders.")
    elif kind == "postscript":
        marker = kw["postscript_marker"]
        forms = {"P.S.": ["P.S.", "p.s.", "P. S."], "P.P.S": ["P.P.S", "p.p.s.", "P. P. S"]}.get(marker, [marker])
        draft.tail.append(f"{rng.choice(forms)} See you soon." if comply else "PS see you soon.")
    elif kind == "number_bullet_lists":
        n = int(kw["num_bullets"]) + (0 if comply else rng.choice([-1, 1]))
        draft.paragraphs.append("\n".join(f"{rng.choice(['*', '-', '  *'])} point {i}" for i in range(max(n, 0))))
    elif kind == "constrained_response":
        draft.paragraphs = [rng.choice(["My answer is yes.", "My answer is no.", "My answer is maybe."]) if comply
                            else rng.choice(["My answer is Yes", "Yes.", "my answer is no."])]
    elif kind == "number_highlighted_sections":
        n = int(kw["num_highlights"]) - (0 if comply else 1)
        marks = [rng.choice(["*part {}*", "**part {}**", "*part {} *"]).format(i) for i in range(max(n, 0))]
        draft.paragraphs.append(" ".join(marks) + (" ** " if rng.random() < 0.3 else ""))
    elif kind == "multiple_sections":
        n = int(kw["num_sections"]) - (0 if comply else 1)
        spliter = kw["section_spliter"]
        draft.paragraphs = [f"{spliter} {i + 1}\n{rng.choice(ENGLISH)}" for i in range(max(n, 0))] or ["None."]
    elif kind == "json_format":
        body = json.dumps({"answer": " ".join(draft.paragraphs)})
        fence = rng.choice(["{}", "```json\n{}\n```", "```\n{}\n```", "```JSON\n{}\n```"])
        wrapped = fence.format(body) if comply else fence.format(body) + "\nThat is all."
        draft.finish.append(lambda _t, w=wrapped: w)
    elif kind == "title":
        draft.head.insert(0, "<<A Quiet Evening>>" if comply else rng.choice(["<< >>", "<A Quiet Evening>", "Title"]))
    elif kind == "two_responses":
        first = "\n\n".join(draft.paragraphs)
        second = first if not comply and rng.random() < 0.5 else rng.choice(ENGLISH)
        parts = [first, second] if comply or first == second else [first, second, rng.choice(ENGLISH)]
        draft.paragraphs, draft.separator = parts, rng.choice(["\n******\n", "\n\n******\n\n", "******"])
    elif kind == "repeat_prompt":
        repeated = kw["prompt_to_repeat"] if comply else kw["prompt_to_repeat"].split(" ", 1)[-1]
        draft.head.insert(0, repeated.upper() if rng.random() < 0.2 else repeated)
    elif kind == "end_checker":
        phrase = kw["end_phrase"]
        draft.tail.append(phrase if comply else phrase + " Bye.")
    elif kind == "capital_word_frequency":
        n = _count(kw, "capital_frequency", "capital_relation", comply, rng)
        draft.edit(str.lower)
        draft.paragraphs.append(" ".join(rng.choice(CAPITAL_WORDS) for _ in range(n)) or "none.")
    elif kind == "english_capital":
        draft.finish.append(lambda t: t.upper() if comply else t.upper().replace("THE", "the", 1) + " ok")
    elif kind == "english_lowercase":
        draft.finish.append(lambda t: t.lower() if comply else t.lower() + " Fine.")
    elif kind == "no_comma":
        draft.finish.append(lambda t: t.replace(",", "") if comply else t + ", indeed")
    elif kind == "quotation":
        draft.finish.append(lambda t: f'"{t}"' if comply else rng.choice([f'"{t}', f"“{t}”", f"'{t}'"]))
    else:
        raise ValueError(f"no transform for {instruction}")


def compose(row: dict[str, Any], comply: list[bool], rng: random.Random, noise: bool) -> str:
    kwargs = [{k: v for k, v in (kw or {}).items() if v is not None} for kw in row["kwargs"]]
    draft = Draft(rng.sample(ENGLISH, 2))
    # structure first, wrappers last: the order IFEval prompts usually imply
    order = sorted(range(len(row["instruction_id_list"])), key=lambda i: _rank(row["instruction_id_list"][i]))
    for i in order:
        apply(row["instruction_id_list"][i], kwargs[i], draft, comply[i], rng, row["prompt"])
    if noise:
        if rng.random() < 0.6:
            draft.head.insert(0, rng.choice(INTROS))
        if rng.random() < 0.6:
            draft.tail.append(rng.choice(OUTROS))
        if rng.random() < 0.3:
            draft.paragraphs = [f"**{p}**" if p else p for p in draft.paragraphs]
    return draft.text()


_LATE = ("json_format", "english_capital", "english_lowercase", "no_comma", "quotation", "two_responses",
         "repeat_prompt", "title", "end_checker", "postscript")


def _rank(instruction: str) -> int:
    kind = instruction.split(":")[1]
    if kind in ("response_language", "number_sentences", "number_words", "number_paragraphs",
                "nth_paragraph_first_word", "multiple_sections", "constrained_response"):
        return 0
    return 2 + _LATE.index(kind) if kind in _LATE else 1


def generated_pairs(rows: list[dict[str, Any]], seed: int = 0) -> Iterator[tuple[dict[str, Any], str, str]]:
    """(row, response, how) for every row: one response made to follow every instruction,
    one breaking one instruction (with a chatty first or last line), and for every other
    row one with each instruction followed or broken at random."""
    rng = random.Random(seed)
    for number, row in enumerate(rows):
        m = len(row["instruction_id_list"])
        yield row, compose(row, [True] * m, rng, noise=False), "comply"
        broken = number % m
        yield row, compose(row, [i != broken for i in range(m)], rng, noise=True), f"break {broken}"
        if number % 2:
            yield row, compose(row, [rng.random() < 0.5 for _ in range(m)], rng, noise=rng.random() < 0.5), "mixed"


def _row(instruction: str, **kwargs: Any) -> dict[str, Any]:
    return {"key": 0, "prompt": "(hand-written case)", "instruction_id_list": [instruction], "kwargs": [kwargs]}


EDGE_CASES: list[tuple[dict[str, Any], str]] = [
    (_row("length_constraints:number_sentences", num_sentences=3, relation="less than"),
     "Dr. Who met Mr. Smith at 3 p.m. in Washington D.C. today. It rained."),
    (_row("length_constraints:number_sentences", num_sentences=3, relation="at least"),
     "The U.S. economy grew 3.5% in 2023... Really? Yes! That's what e.g. the I.M.F. said."),
    (_row("length_constraints:number_sentences", num_sentences=2, relation="at least"),
     "First line without a stop\nSecond line without a stop"),
    (_row("length_constraints:number_sentences", num_sentences=4, relation="less than"),
     '"Stop!" he said. "Why?" she asked. He laughed.'),
    (_row("length_constraints:number_words", num_words=10, relation="less than"),
     "Well-known state-of-the-art e-mail isn't 3.5% off: it's 100% free!"),
    (_row("length_constraints:number_words", num_words=5, relation="at least"), "naïve café, déjà vu — 東京"),
    (_row("change_case:capital_word_frequency", capital_frequency=3, capital_relation="at least"),
     "I DON'T think so."),
    (_row("change_case:capital_word_frequency", capital_frequency=3, capital_relation="less than"),
     "The U.S.A. and the U.K. are WELL-KNOWN."),
    (_row("change_case:capital_word_frequency", capital_frequency=2, capital_relation="at least"),
     "NASA's mission (ESA) was OK."),
    (_row("change_case:english_capital"), "HELLO, WORLD! 123 ÉTÉ."),
    (_row("change_case:english_capital"), "12345 !!!"),
    (_row("change_case:english_lowercase"), "hello world, this is all lowercase text about the sea."),
    (_row("change_case:english_lowercase"), "bonjour tout le monde, ceci est un texte en français."),
    (_row("detectable_content:postscript", postscript_marker="P.S."), "Hello.\n\np. s. see you"),
    (_row("detectable_content:postscript", postscript_marker="P.S."), "Hello.\n\nP.S see you"),
    (_row("detectable_content:postscript", postscript_marker="P.P.S"), "Hello.\nP.P.S. more"),
    (_row("detectable_content:postscript", postscript_marker="P.P.S"), "Hello.\nP. P.S. more"),
    (_row("detectable_format:json_format"), '```Json\n{"a": 1}\n```'),
    (_row("detectable_format:json_format"), '```python\n{"a": 1}\n```'),
    (_row("detectable_format:json_format"), "[1, 2, 3]"),
    (_row("detectable_format:json_format"), "{'a': 1}"),
    (_row("detectable_format:title"), "<<>> and <<  >>"),
    (_row("detectable_format:title"), "<<Split\ntitle>>"),
    (_row("detectable_format:title"), "<<<Nested title>>>"),
    (_row("length_constraints:number_paragraphs", num_paragraphs=2), "***\nOne\n***\nTwo\n***"),
    (_row("length_constraints:number_paragraphs", num_paragraphs=2), "One\n***\n\n***\nTwo"),
    (_row("length_constraints:number_paragraphs", num_paragraphs=3), "One *** Two****Three"),
    (_row("length_constraints:nth_paragraph_first_word", num_paragraphs=2, nth_paragraph=2, first_word="after"),
     "Before.\n\n\n\n'After, all."),
    (_row("length_constraints:nth_paragraph_first_word", num_paragraphs=2, nth_paragraph=2, first_word="after"),
     "Before.\n\n  \n\nAfter all."),
    (_row("length_constraints:nth_paragraph_first_word", num_paragraphs=3, nth_paragraph=1, first_word="zero"),
     '"Zero." one\n\ntwo\n\nthree'),
    (_row("detectable_format:number_bullet_lists", num_bullets=2), "* one\n** bold line\n- two\n  - three"),
    (_row("detectable_format:number_bullet_lists", num_bullets=2), "*one\n-two"),
    (_row("detectable_format:number_highlighted_sections", num_highlights=2), "**bold** and *it*"),
    (_row("detectable_format:number_highlighted_sections", num_highlights=2), "* a * and ** **"),
    (_row("detectable_format:number_highlighted_sections", num_highlights=1), "*across\nlines*"),
    (_row("detectable_format:multiple_sections", section_spliter="SECTION", num_sections=2),
     "SECTION 1 intro SECTION2 body"),
    (_row("detectable_format:multiple_sections", section_spliter="Section", num_sections=2),
     "section 1 intro SECTION 2 body"),
    (_row("detectable_format:multiple_sections", section_spliter=" Day ", num_sections=1), "Day 1: arrive"),
    (_row("combination:two_responses"), "Answer one.\n******\n******\nAnswer two."),
    (_row("combination:two_responses"), "******\nAnswer one.\n******\nAnswer two.\n******"),
    (_row("combination:two_responses"), "Same.\n******\n Same. "),
    (_row("combination:repeat_prompt", prompt_to_repeat="Write a poem."), "  write a POEM. Here it is."),
    (_row("startend:end_checker", end_phrase="Is there anything else I can help with?"),
     '"Done. is there anything else i can help with?"'),
    (_row("startend:end_checker", end_phrase="Peace!"), "Goodbye. Peace!\n"),
    (_row("startend:quotation"), '"'),
    (_row("startend:quotation"), ' "Wrapped, with spaces around." '),
    (_row("punctuation:no_comma"), "No commas here — only dashes; and semicolons."),
    (_row("punctuation:no_comma"), "A Chinese comma， is not a comma here."),
    (_row("keywords:existence", keywords=["cat", "dog"]), "Concatenate the hotdog strings."),
    (_row("keywords:frequency", keyword="the", frequency=3, relation="less than"), "The theory: there, then."),
    (_row("keywords:forbidden_words", forbidden_words=["cat", "dog"]), "Concatenate hotdogs; the CAT sat."),
    (_row("keywords:forbidden_words", forbidden_words=["cat"]), "Concatenate hotdogs only."),
    (_row("keywords:letter_frequency", letter="e", let_frequency=3, let_relation="less than"), "EeE"),
    (_row("keywords:letter_frequency", letter="z", let_frequency=2, let_relation="at least"), "Zigzag"),
    (_row("detectable_content:number_placeholders", num_placeholders=2), "[a] [b] [c]"),
    (_row("detectable_content:number_placeholders", num_placeholders=2), "[a\nb] []"),
    (_row("detectable_format:constrained_response"), "Well... My answer is maybe. Or not."),
    (_row("detectable_format:constrained_response"), "My answer is YES."),
    (_row("language:response_language", language="de"), "Guten Tag, wie geht es Ihnen heute?"),
    (_row("language:response_language", language="ko"), "안녕하세요, 만나서 반갑습니다."),
    (_row("language:response_language", language="ru"), "12345 !!!"),
    (_row("language:response_language", language="hi"), "Hello, this is English, not Hindi."),
    (_row("punctuation:no_comma"), "   \n  "),
]


def all_pairs(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str, str]]:
    """Every pair: the generated ones and the hand-written edge cases."""
    return [*generated_pairs(rows), *((row, response, "edge") for row, response in EDGE_CASES)]
