#!/usr/bin/env python3
"""Synthetic memkit vaults for the benchmarks (`bench/bench.py`): deterministic, cached, realistic.

A vault of N entries is a stream of topic files, ~50 entries each (so 100k entries -> ~2,000 topic
files), every one a valid memkit topic: YAML frontmatter (title, summary, created, updated), a
heading and ``- [kind] text #tag (YYYY-MM-DD)`` lines written with :func:`memkit.formats.topic.format_entry`.

Sentences have 8-25 words drawn from a 3,000-word English vocabulary with Zipfian frequencies
(the most frequent whole words of a WordPiece vocabulary, in frequency order), mixed with the
topic's own theme words (so a topic is about something), capitalised first names, numbers and
amounts, and rare tokens (part numbers, versions, invoice ids) that a lexical search must find.

Topic ``i`` depends only on (seed, i), so the 1k vault's topics are the first topics of the 10k
vault, and the benchmark queries (:func:`make_queries`, made from the first 1,000 entries) make
sense at every size.

Vaults are cached under ``bench/out/synth/`` (git-ignored): a rerun reuses them.

    python bench/synth.py 1k 10k 100k        # generate (or find) the vaults, print their paths
    python bench/synth.py 10k --queries 5    # ... and show a few benchmark queries
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memkit.formats.topic import format_entry, new_topic_text, set_frontmatter  # noqa: E402

SYNTH_VERSION = 1  # bump when the generator's output changes (invalidates the cache)
DEFAULT_SEED = 20261122
OUT = ROOT / "bench" / "out" / "synth"
ENTRIES_PER_TOPIC = (35, 65)  # uniform: ~50 on average
FUNCTION_WORDS = 120  # the most frequent words: never topic themes, skipped in query keywords

# The 3,000 most frequent whole English words of a WordPiece (BERT uncased) vocabulary, most
# frequent first: rank r gets a Zipf-Mandelbrot weight 1 / (r + 2.7).
_WORDS = """
the of and in to was he is as for on with that it his by at from her she you had an were but be this
are not my they one which or have him me first all also their has up who out been when after there
into new two its time would no what about said we over then other so more can if like back them only
some could where just during before do made school through than now years most world may between
down well three year while will later city under around did such being used state people part know
against your many second university both national these don known off way until re how even get head
didn team american because de born united film since still long work south us became any high again
day family see right man eyes house season war states including took life north same each called
name much place however go four group another found won area here going away series left home music
best make hand number company several never last john very album take end good too following
released game played little began district old want those side held own early county ll league use
west face think government march came small general town june line based something september thought
looked along international air july club went january october our august april york few east show
member college father public come men five set station church next former november room party
located december age got system let love though every look song water century without body black
night within great women single ve building large population river named band white started once
should service top built british open death king moved local times children february book why door
need president order final road wasn although due major died village third knew asked turned st
wanted say together received main son served different behind himself felt members power football
law voice play near park history having saw mother army point front help english street art late
hands games award young put published country division across told often ever french london center
six red led days include light find tell among species really according central half form original
gave office making enough lost full opened must included live given german player run business woman
community cup might million land court development short round ii km seen class story always become
sure research almost director council la career things using island couldn car close force better
free support control field students education married nothing worked others record big inside level
anything continued give james military established non returned feel does title written thing feet
william far co association hard already championship human western department hall role various
production heart living fire version television royal produced working act case society region
present radio period looking least total keep england wife program per brother mind special am works
soon political george services taken created further able reached david union joined upon done
important social information either appeared position ground lead rock dark election board france
hair course arms site police girl instead real sound words moment someone summer project announced
san less wrote past followed blue founded al finally india taking records america design considered
northern god stop battle toward european outside described track today playing language call heard
professional low australia miles california win yet green trying blood southern science maybe
everything match square mouth video race recorded leave above daughter points space museum change
middle common move tv post lake seven tried elected closed ten paul minister months start chief
return canada person sea release similar modern brought rest hit formed mr floor event doing thomas
robert care killed training star week needed turn finished railway rather news health sent example
ran term michael coming currently yes forces despite gold areas stage fact dead says popular
originally germany probably developed result pulled friend stood money running mi signed word songs
child eventually met tour average teams minutes festival current deep kind decided usually eastern
seemed episode bed added table indian private charles route available idea throughout centre
addition appointed style books eight construction press mean wall friends remained schools study
institute oh chinese sometimes events possible australian type brown forward talk process food debut
seat performance committee features character arts herself else lot strong russian range hours peter
arm morning dr sold quickly directed guitar china list performed media uk players smile myself
placed coach province towards wouldn leading whole boy official designed grand census europe attack
japanese henry cross getting alone action lower network wide washington japan hospital believe
changed sister hold gone sir hadn ship studies academy shot rights below base bad involved kept
largest bank future especially beginning mark movement section female magazine plan professor lord
longer sat walked hill actually civil energy model families size thus aircraft completed includes
data captain fight vocals featured richard bridge fourth officer stone hear means medical groups
management self lips competition entire lived technology leaving federal tournament bit passed hot
independent awards kingdom mary spent fine doesn reported jack fall raised itself stay true studio
sports replaced paris systems saint leader theatre whose market capital parents spanish canadian
earth cut degree writing bay christian awarded natural higher bill coast provided previous senior ft
valley organization stopped onto countries parts conference queen security interest saying allowed
master earlier phone matter smith winning try happened moving campaign los breath nearly mid certain
girls date italian african standing fell artist shows deal mine industry everyone republic provide
collection library student primary owned older via heavy makes attention anyone africa stated length
ended fingers command staff skin foreign opening governor okay medal kill sun cover job introduced
chest hell feeling success meet reason standard meeting novel trade source buildings rose guy goal
chapter native husband previously unit limited entered weeks producer operations mountain takes
covered forced related roman complete successful key texas cold channel traditional films dance
clear approximately nine van prince question active tracks ireland regional silver author personal
sense operation economic holding twenty isbn additional speed hour edition regular historic places
whom shook movie secretary prior report chicago read foundation view engine scored units ask airport
property ready immediately lady month listed contract manager themselves lines navy writer meant
runs practice championships singer glass commission required forest starting culture generally
giving access attended test couple stand catholic martin caught executive eye thinking chair quite
shoulder hope decision plays defeated municipality whether structure offered slowly pain ice
direction paper mission mostly noted individual managed nature lives plant helped except studied
computer figure relationship issue significant loss die smiled gun ago highest male bring goals
mexico problem distance commercial completely location annual famous drive neck surface caused italy
understand greek highway wrong hotel comes appearance joseph double issues musical companies castle
income review assembly bass initially parliament artists experience particular walk foot engineering
talking window dropped miss baby boys break stars edge remember policy carried train stadium bar sex
angeles evidence becoming assistant soviet upper step wing youth financial reach actor numerous
nodded arrived minute believed sorry complex beautiful victory associated temple chance perhaps
metal bishop lee launched particularly tree le retired subject prize contains yeah theory empire
suddenly waiting trust recording happy terms camp champion religious pass zealand names port ancient
tom corner represented watch legal anti justice cause watched brothers material changes simply
response louis fast answer historical stories straight create feature increased rate administration
virginia el activities cultural overall winner programs basketball legs guard beyond cast doctor mm
flight results remains cost effect winter larger islands problems chairman grew commander isn pay
failed selected hurt fort box regiment majority journal edward plans shown pretty irish characters
directly scene likely operated allow spring junior matches looks mike houses fellow beach marriage
rules oil florida expected nearby congress sam peace recent iii wait subsequently cell variety
serving agreed please poor joe pacific attempt wood democratic piece prime rural mile touch appears
township soldiers pennsylvania closer fighting claimed score jones physical editor filled genus
specific sitting super mom therefore supported status fear cases store meaning wales minor spain
tower focus vice frank follow parish separate golden horse fifth remaining branch presented stared
uses secret forms baseball exactly choice note discovered travel composed truth russia ball color
kiss dad wind continue ring referred numbers digital greater metres slightly direct increase
responsible crew rule trees troops broke goes individuals hundred weight creek sleep memory defense
provides ordered code value jewish windows safe judge whatever corps realized growing pre cities
alexander gaze lies spread scott letter showed situation mayor transport watching workers extended
expression normal chart multiple border host daily mrs walls piano heat cannot earned products drama
era authority seasons join grade sign difficult machine territory mainly stations squadron stepped
iron serve appear sky speak broken charge knowledge kilometres removed ships article campus simple
pushed britain leaves recently cd soft boston latter easy acquired poland quality officers presence
planned nations mass broadcast jean share image influence wild offer emperor electric reading headed
ability promoted yellow ministry throat smaller politician latin spoke cars williams males lack pop
acting seeing consists estate pressure johnson newspaper jr chris olympics online conditions beat
elements walking vote needs carolina text featuring global block shirt levels francisco purpose
females et dutch duke ahead gas twice safety serious turning highly lieutenant firm maria amount
mixed daniel proposed perfect agreement affairs seconds contemporary paid prison save kitchen label
administrative intended constructed academic nice teacher races formerly corporation ben nation
issued shut drums housing victoria seems opera graduated function von mentioned picked build
recognized shortly protection picture notable exchange elections loved percent racing fish elizabeth
garden volume hockey beside settled competed replied drew actress marine scotland steel glanced farm
steve risk tonight positive magic singles effects gray screen dog residents bus sides none secondary
literature polish destroyed flying founder households lay reserve usa gallery industrial younger
approach appearances urban ones finish avenue powerful fully growth page honor jersey projects
advanced revealed basic infantry pair equipment visit evening search grant effort solo treatment
buried republican primarily bottom owner israel gives jim dream bob remain spot notes produce
champions contact ed soul accepted ways del losing split price capacity basis trial questions guess
officially memorial naval initial whispered median engineer sydney columbia strength tears senate
card asian agent software draw warm supposed com pro transferred leaned candidate escape mountains
asia potential activity entertainment seem traffic jackson murder slow product orchestra haven
agency bbc taught website comedy unable storm planning albums rugby environment scientific grabbed
protect boat typically damage principal divided dedicated mount ohio pick fought driver empty
shoulders sort thank berlin prominent account freedom necessary efforts alex headquarters follows
alongside des simon andrew suggested operating learning steps sweet technical begin easily teeth
speaking settlement scale renamed ray max enemy semi joint compared scottish leadership analysis
offers georgia pieces captured animal deputy guest organized tony combined method challenge huge
wants battalion sons rise crime types facilities telling path platform sit tells assigned rich pull
commonly alive letters concept conducted wearing happen bought becomes holy gets ocean defeat
languages purchased coffee occurred titled declared applied sciences concert sounds jazz brain
painting fleet tax nick michigan count animals leaders episodes content birth clubs palace critical
refused fair leg laughed returning surrounding participated formation lifted pointed connected rome
medicine laid taylor santa powers adam tall shared focused knowing yards entrance falls calling
sources chosen beneath resources yard nominated silence zone defined gained thirty bodies moon
adopted christmas widely register apart iran premier serves du unknown parties generation continues
quick fields brigade quiet teaching clothes impact weapons partner flat theater supreme relations
plants suffered wilson kids begins seats armed internet models worth laws communities classes
background knows thanks quarter reaching humans carry killing format kong hong setting architecture
disease railroad inc possibly wish arthur thoughts harry doors density crowd illinois stomach tone
unique reports anyway liberal der vehicle thick dry drug faced largely facility theme holds creation
strange colonel revolution bell politics turns silent rail relief independence combat shape write
determined sales learned finger oxford providing heritage fiction situated designated allowing
distribution hosted sight interview estimated reduced toronto footballer keeping guys damn claim
motion sport sixth stayed en rear receive handed twelve dress audience granted brazil spirit noticed
etc olympic representative eric tight trouble reviews drink vampire missing roles ranked newly
household finals wave critics phase massachusetts pilot unlike philadelphia bright guns crown
organizations roof respectively clearly tongue marked circle fox korea bronze brian expanded sexual
supply yourself inspired labour fc reference vision draft connection brand reasons classic driving
trip jesus cells entry neither trail claims atlantic orders labor nose afraid identified
intelligence calls cancer attacked passing stephen positions imperial grey jason sunday swedish
avoid extra uncle message covers allows surprise materials fame hunter citizens figures davis
environmental confirmed shit titles di performing difference acts attacks existing votes opportunity
nor shop entirely trains opposite pakistan develop resulted representatives actions reality pressed
barely wine conversation faculty northwest ends documentary nuclear stock grace sets eat alternative
bag resulting creating surprised cemetery drop finding sarah cricket streets tradition ride
exhibition target ear explained rain composer injury apartment municipal educational occupied
netherlands clean billion constitution learn maximum classical francis lose opposition jose ontario
bear core hills rolled ending drawn permanent fun lewis sites chamber ryan scoring height lyrics
staring officials snow oldest orange qualified interior apparently succeeded thousand dinner lights
existence fans heavily greatest conservative send bowl plus enter catch economy duty speech
authorities princess performances versions shall graduate pictures effective remembered poetry desk
crossed starring starts passenger sharp acres ass weather falling rank fund supporting check adult
publishing heads cm southeast lane application bc les condition transfer prevent display ex regions
earl federation cool relatively answered besides obtained portion mix reaction liked dean express
peak counter religion chain rare miller convention aid lie vehicles mobile perform squad wonder
lying crazy sword attempted centuries weren philosophy category anna interested sweden wolf
frequently abandoned kg literary alliance task entitled threw promotion factory tiny soccer visited
matt fm achieved defence internal persian methods arrested otherwise cambridge programming villages
elementary districts rooms criminal conflict worry trained attempts waited signal bird truck
subsequent programme ad communist details faith sector patrick carrying laugh controlled korean
showing origin fuel evil brief identity darkness address pool missed publication web planet ian anne
wings invited briefly standards kissed ideas climate causing walter worse albert articles winners
desire aged northeast dangerous gate doubt wooden multi poet rising funding communications
communication violence copies prepared ford investigation skills pulling electronic containing
ultimately offices singing understanding restaurant tomorrow fashion christ ward da pope stands flow
studios aired commissioned contained exist fresh americans wrestling approved kid employed respect
suit angel asking increasing frame angry selling thin finds temperature statement ali explain
inhabitants towns extensive narrow jane flowers images promise somewhere object fly closely bureau
cape weekly presidential legislative launch founding artillery strike un institutions roll writers
landing chose kevin anymore pp attorney fit dan billboard receiving agricultural breaking sought
dave admitted lands mexican charlie specifically hole iv howard credit moscow roads accident proved
wear struck hey guards stuff slid expansion cat anthony melbourne opposed sub southwest architect
failure plane map camera tank listen regarding wet introduction metropolitan link ep fighter inch
grown gene anger fixed buy dvd khan domestic worldwide chapel mill functions examples developing
turkey hits pocket antonio papers grow unless circuit concerned attached journalist selection
journey converted provincial painted hearing aren bands negative aside wondered knight lap survey ma
noise billy shooting guide bedroom priest resistance motor homes sounded giant scenes equal comic
patients hidden solid actual bringing afternoon touched funds wedding consisted marie canal sr kim
treaty turkish recognition residence cathedral broad knees incident shaped fired norwegian handle
cheek contest represent representing beauty birds advantage emergency wrapped drawing notice pink
broadcasting somehow bachelor seventh collected registered establishment alan assumed chemical
personnel roger retirement jeff portuguese wore tied device threat progress advance banks hired
manchester nfl teachers structures forever tennis helping saturday sale applications junction hip
incorporated neighborhood dressed ceremony influenced hers visual stairs decades inner kansas hung
hoped gain scheduled downtown engaged austria clock norway certainly pale protected victor employees
plate putting surrounded finishing blues tropical minnesota consider philippines accept retrieved
concern anderson properties institution gordon successfully vietnam backing outstanding muslim
crossing folk producing usual demand occurs observed lawyer educated kelly string pleasure budget
items quietly colorado philip typical derived survived asks mental jake jews distinguished ltd sri
extremely athletic loud thousands worried shadow transportation horses weapon arena importance users
tim objects contributed dragon douglas aware senator johnny jordan sisters engines flag investment
samuel shock capable clark row wheel refers session familiar biggest wins hate maintained drove
hamilton request expressed injured underground churches walker wars tunnel passes stupid agriculture
softly cabinet regarded joining indiana push dates spend behavior woods protein gently chase morgan
mention burning wake combination occur mirror leads jimmy indeed impossible singapore paintings
covering soldier locations attendance sell historian wisconsin invasion argued painter diego
changing egypt experienced inches missouri vol grounds spoken switzerland reform rolling ha forget
massive resigned burned allen tennessee locked values improved wounded universe sick dating facing
pack purchase user moments merged anniversary coal brick understood causes dynasty queensland
establish stores crisis promote hoping views cards referee extension raise arizona improve colonial
formal charged palm lucky hide rescue faces feelings candidates juan goods courses weekend luke cash
fallen delivered affected installed carefully tries swiss hollywood costs lincoln responsibility
shore file proper normally maryland assistance jump constant offering friendly waters persons
realize contain trophy partnership factor musicians cry bound oregon indicated hero houston medium
consisting somewhat cycle beer moore frederick gotten eleven worst weak approached arranged chin
loan universal bond fifteen pattern disappeared translated lip arab capture interests insurance
shifted cave prix warning sections courts coat plot smell feed golf favorite maintain knife vs voted
degrees finance quebec opinion translation manner ruled operate productions choose musician
discovery confused tired separated
"""
WORDS: tuple[str, ...] = tuple(_WORDS.split())

NAMES = tuple("""
Maya Sofia Lucas Ana Pedro Ines Tiago Marta Rui Joana Miguel Beatriz Nuno Carla Hugo Rita Diogo
Leonor Bruno Clara Omar Priya Wei Yuki Amara Kofi Elena Ivan Noor Samir Freya Lars Ingrid Mateo
Lucia Chen Akira Zara Felix Nadia Tomas Emil Olga Ravi Asha Jonas Helga Pablo Greta Dmitri Aiko
""".split())
KINDS = ("fact", "preference", "decision", "event", "discovery", "todo", "idea", "problem")
UNITS = ("kg", "km", "min", "h", "EUR", "GB", "mm", "W", "V", "%", "x", "USD", "days", "ml")
_CONS = "BCDFGHJKLMNPRSTVXZ"


def _zipf_p(n: int, offset: float = 2.7, s: float = 1.0) -> np.ndarray:
    p = 1.0 / (np.arange(n, dtype=np.float64) + offset) ** s
    return p / p.sum()


_P_ALL = _zipf_p(len(WORDS))


@dataclass
class SynthTopic:
    """One generated topic file."""

    name: str
    title: str
    summary: str
    created: datetime
    updated: datetime
    entries: list[str]  #: the entry lines, ``- ...``
    rare: list[str]  #: rare tokens used in this topic
    theme: list[str]  #: its theme words

    def text(self) -> str:
        head = set_frontmatter(new_topic_text(self.title, self.summary, self.updated), {"created": self.created})
        return head + "\n".join(self.entries) + "\n"


def _rare_token(rng: np.random.Generator) -> str:
    """A part number, version, invoice id, serial...: something no model vocabulary knows."""
    kind = int(rng.integers(6))
    letters = "".join(rng.choice(list(_CONS), size=int(rng.integers(2, 4))))
    num = int(rng.integers(10, 99999))
    if kind == 0:
        return f"{letters}{num}{rng.choice(['', 'UG', 'X', '-S', 'Pro'])}"
    if kind == 1:
        return f"SN-{int(rng.integers(10000, 99999))}-{rng.choice(list(_CONS))}"
    if kind == 2:
        return f"v{int(rng.integers(0, 12))}.{int(rng.integers(0, 40))}.{int(rng.integers(0, 20))}"
    if kind == 3:
        return f"INV-{int(rng.integers(2019, 2027))}-{int(rng.integers(1, 9999)):04d}"
    if kind == 4:
        return f"{letters.lower()}{rng.choice(['-ax', '-lte', '-mk'])}{int(rng.integers(2, 9))}"
    return f"{letters}-{num:05d}"


def _sentence(rng: np.random.Generator, theme: np.ndarray, rare: list[str]) -> tuple[str, str | None]:
    """(sentence, rare token used or None)."""
    n = int(np.clip(np.round(rng.gamma(6.0, 2.4)) + 3, 8, 25))  # 8-25 words, mode ~15
    general = rng.choice(len(WORDS), size=n, p=_P_ALL)
    use_theme = rng.random(n) < 0.3
    picks = np.where(use_theme, rng.choice(theme, size=n), general)
    words = [WORDS[i] for i in picks]
    if rng.random() < 0.25:  # a person
        words[int(rng.integers(n))] = NAMES[int(rng.integers(len(NAMES)))]
    if rng.random() < 0.2:  # a number or an amount
        value = rng.choice([f"{int(rng.integers(1, 500))}", f"{rng.random() * 100:.1f}",
                            f"{int(rng.integers(0, 24)):02d}:{int(rng.choice([0, 15, 30, 45])):02d}"])
        words[int(rng.integers(n))] = f"{value} {rng.choice(UNITS)}" if rng.random() < 0.6 else str(value)
    token = None
    if rng.random() < 0.08:  # a rare token (re-used within the topic now and then)
        token = rare[int(rng.integers(len(rare)))] if rare and rng.random() < 0.3 else _rare_token(rng)
        words[int(rng.integers(n))] = token
    words[0] = words[0][:1].upper() + words[0][1:]
    text = " ".join(words)
    if rng.random() < 0.3:
        text += "."
    return text, token


def make_topic(index: int, seed: int = DEFAULT_SEED, n_entries: int | None = None) -> SynthTopic:
    """Topic number ``index`` of the stream (a function of (seed, index) only).

    :param n_entries: cut it to this many entries (the last topic of a vault).
    """
    rng = np.random.default_rng([seed, index])
    theme = rng.choice(np.arange(FUNCTION_WORDS, len(WORDS)), size=25, replace=False)
    name_words = [WORDS[i] for i in theme[:2]]
    name = f"{name_words[0]}-{name_words[1]}-{index:05d}"
    title = f"{name_words[0].capitalize()} {name_words[1]}"
    summary = " ".join(WORDS[i] for i in theme[2:6])
    created = datetime(2024, 1, 1, 9, 0) + timedelta(days=int(rng.integers(0, 500)), minutes=int(rng.integers(0, 600)))
    count = int(rng.integers(ENTRIES_PER_TOPIC[0], ENTRIES_PER_TOPIC[1] + 1))
    if n_entries is not None:
        count = min(count, n_entries)
    day = created
    entries, rare = [], []
    for _ in range(count):
        day = day + timedelta(days=int(rng.integers(0, 6)))
        text, token = _sentence(rng, theme, rare)
        if token and token not in rare:
            rare.append(token)
        kind = KINDS[int(rng.integers(len(KINDS)))] if rng.random() < 0.3 else None
        tags = [WORDS[i] for i in rng.choice(theme[:8], size=int(rng.integers(1, 3)), replace=False)] \
            if rng.random() < 0.4 else []
        date = day.date().isoformat() if rng.random() < 0.85 else None
        entries.append(format_entry(text, kind, tags, date))
    updated = day.replace(hour=18, minute=30)
    return SynthTopic(name, title, summary, created, updated, entries, rare, [WORDS[i] for i in theme])


def iter_topics(n_entries: int, seed: int = DEFAULT_SEED):
    """The topics of an ``n_entries`` vault, in order (their entries add up to exactly n_entries)."""
    left, i = n_entries, 0
    while left > 0:
        topic = make_topic(i, seed, n_entries=left)
        left -= len(topic.entries)
        i += 1
        yield topic


def parse_size(text: str) -> int:
    """``1k`` -> 1000, ``100k`` -> 100000, ``2m`` -> 2000000, ``500`` -> 500."""
    t = text.strip().lower().replace("_", "").replace(",", "")
    mult = 1
    if t.endswith("k"):
        mult, t = 1000, t[:-1]
    elif t.endswith("m"):
        mult, t = 1_000_000, t[:-1]
    return int(float(t) * mult)


def size_label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}m"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def vault_path(n_entries: int, seed: int = DEFAULT_SEED, out: Path = OUT) -> Path:
    return out / f"vault-{size_label(n_entries)}-s{seed}-v{SYNTH_VERSION}"


MEMKIT_YAML = "# A synthetic vault written by memkit's bench/synth.py. Every setting is the default.\n"


def generate(n_entries: int, seed: int = DEFAULT_SEED, out: Path = OUT, force: bool = False,
             quiet: bool = False) -> Path:
    """The folder of the synthetic vault of ``n_entries`` entries, generating it if not cached.

    The cached copy is pristine (topic files only, no ``.memkit/``): benchmarks that edit or
    index should work on a copy (:func:`working_copy`).
    """
    path = vault_path(n_entries, seed, out)
    marker = path / ".synth.json"
    params = {"entries": n_entries, "seed": seed, "version": SYNTH_VERSION}
    if not force and marker.is_file():
        try:
            if json.loads(marker.read_text())["params"] == params:
                return path
        except (OSError, ValueError, KeyError):
            pass
    started = time.perf_counter()
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "topics").mkdir(parents=True)
    (tmp / "inbox").mkdir()
    (tmp / "memkit.yaml").write_text(MEMKIT_YAML)
    (tmp / ".gitignore").write_text(".memkit/\n")
    files = entries = 0
    recent = []
    for topic in iter_topics(n_entries, seed):
        (tmp / "topics" / f"{topic.name}.md").write_text(topic.text(), encoding="utf-8")
        files += 1
        entries += len(topic.entries)
        recent.append((topic.updated, topic.name, topic.summary))
    recent.sort(reverse=True)
    (tmp / "index.txt").write_text("".join(f"{u.strftime('%Y-%m-%d %H:%M')} {n}: {s}\n" for u, n, s in recent[:20]))
    stamp = {"params": params, "files": files, "entries": entries,
             "seconds": round(time.perf_counter() - started, 2)}
    (tmp / ".synth.json").write_text(json.dumps(stamp) + "\n")
    shutil.rmtree(path, ignore_errors=True)
    os.replace(tmp, path)
    if not quiet:
        print(f"synth: wrote {entries:,} entries in {files:,} topic files to {path} "
              f"in {stamp['seconds']:.1f} s", file=sys.stderr)
    return path


def working_copy(n_entries: int, dest: Path, seed: int = DEFAULT_SEED) -> Path:
    """A fresh copy of the cached vault at ``dest`` (any old copy there is replaced)."""
    src = generate(n_entries, seed)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".memkit"))
    return dest


def make_queries(n: int = 200, seed: int = DEFAULT_SEED, source_entries: int = 1000) -> list[str]:
    """``n`` varied queries about the first ``source_entries`` entries of the stream (so they fit
    every vault size): keyword paraphrases of an entry, rare tokens alone or in a phrase, a
    topic's theme, free questions, one-word and very long queries. Deterministic."""
    topics = list(iter_topics(source_entries, seed))
    rng = np.random.default_rng([seed, 999_999])
    bodies = []
    for t in topics:
        for line in t.entries:
            body = line[2:]
            if body.startswith("["):
                body = body.split("] ", 1)[-1]
            bodies.append(body.split(" #")[0].split(" (20")[0])
    rare = [r for t in topics for r in t.rare]
    content = lambda w: w.lower().strip(".") not in _FUNCTION_SET and w.isalpha()  # noqa: E731
    prefixes = ("", "", "what about", "when did", "where is the", "who", "how do I", "why", "which")
    out: list[str] = []
    while len(out) < n:
        r = rng.random()
        if r < 0.4:  # a paraphrase: some content words of one entry, shuffled
            words = [w.strip(".") for w in bodies[int(rng.integers(len(bodies)))].split() if content(w)]
            if len(words) < 2:
                continue
            k = int(rng.integers(2, min(6, len(words)) + 1))
            pick = list(rng.choice(words, size=k, replace=False))
            q = " ".join([prefixes[int(rng.integers(len(prefixes)))], *pick]).strip()
        elif r < 0.58 and rare:  # a rare token
            tok = rare[int(rng.integers(len(rare)))]
            q = tok if rng.random() < 0.5 else f"{rng.choice(['which one is', 'notes on', 'what did I note about'])} {tok}"
        elif r < 0.76:  # a topic's theme
            t = topics[int(rng.integers(len(topics)))]
            q = " ".join(rng.choice(t.theme, size=int(rng.integers(2, 5)), replace=False))
        elif r < 0.94:  # a free question in everyday words
            k = int(rng.integers(5, 13))
            q = " ".join(WORDS[i] for i in rng.choice(len(WORDS), size=k, p=_P_ALL)).capitalize() + "?"
        elif r < 0.97:  # one word
            q = WORDS[int(rng.integers(FUNCTION_WORDS, len(WORDS)))]
        else:  # very long (a pasted paragraph)
            q = " ".join(bodies[int(rng.integers(len(bodies)))] for _ in range(4))
        out.append(q)
    return out


_FUNCTION_SET = frozenset(WORDS[:FUNCTION_WORDS])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sizes", nargs="*", default=["1k", "10k", "100k"], help="vault sizes (default: 1k 10k 100k)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--force", action="store_true", help="regenerate even if cached")
    ap.add_argument("--queries", type=int, default=0, metavar="N", help="also print N benchmark queries")
    args = ap.parse_args(argv)
    for size in args.sizes:
        print(generate(parse_size(size), args.seed, force=args.force))
    for q in make_queries(args.queries, args.seed) if args.queries else []:
        print(q)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
