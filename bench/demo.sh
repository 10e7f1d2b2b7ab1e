#!/usr/bin/env bash
# `make demo`: a scripted tour of memkit on a copy of the sample vault. No network, no real LLM.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" HF_HUB_OFFLINE=1
work=$(mktemp -d)
trap 'kill "${llm_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
cp -r vault "$work/vault"
rm -rf "$work/vault/.memkit"
export MEMKIT_VAULT="$work/vault"
# memkit's built-in model, as a machine without potion-base-8M cached gets it by default; named so
# that the demo (and the examples of README.md and docs/, which run its commands) give the same results everywhere.
export MEMKIT_MODEL=memkit-m2v
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

echo "memkit demo on a copy of vault/ in $work/vault"
step memkit topics
step memkit recent
step memkit add "Prefers window seats on trains" --topic travel --kind preference --tag trains
step memkit show travel
step memkit index
step memkit search "what rice do I use for paella"
step memkit search "MikroTik hAP ax3"
step memkit search "who is my doctor" --topic health -k 2
echo; echo "--- find, then judge: questions worded unlike their answer ---"
step memkit search "what do I drive?" -k 2
step memkit search "what do I drive?" -k 2 --fast
step memkit search "vet" --kind event --json

echo; echo "--- split: cooking (67 entries, under the sample's topic_split_threshold_lines: 80) split by hand ---"
step memkit split cooking --dry-run --json
step memkit split cooking
step memkit topics

echo; echo "--- digest: a scripted local LLM server stands in for Ollama/OpenAI ---"
python bench/demo/demo_llm.py "$work/llm-url" & llm_pid=$!
for _ in $(seq 50); do [ -s "$work/llm-url" ] && break; sleep 0.1; done
sed -i "s|^llm: {}|llm: {base_url: \"$(cat "$work/llm-url")\", model: demo, timeout_s: 10}|" "$work/vault/memkit.yaml"
step memkit digest --dry-run bench/demo/transcript-2026-11-21.txt
step memkit digest bench/demo/transcript-2026-11-21.txt
step memkit digest bench/demo/transcript-2026-11-21.txt
step tail -n 4 "$work/vault/archive.md"
step memkit search "rye starter" -k 3
echo; echo "--- context: what an assistant puts in its system prompt ---"
step memkit context "should I order the shrimp pasta?" --budget 400
step memkit context "hi!" --session demo --budget 400
step memkit context "I'm planning my training for the half marathon" --session demo --budget 600
echo; echo "--- conversations: a session saved as a file, continued later from its recent history ---"
step memkit session new --id lisbon --title "Lisbon trip" --system "You are Maya's travel assistant."
step memkit session add lisbon user "I want to spend a week in Lisbon in March"
step memkit session add lisbon assistant --important -- "Booked: TAP flight TP 571 on March 3rd, back on the 10th"
step memkit session add lisbon user "Good. Remind me to look for a quiet hotel in Alfama"
step memkit session add lisbon assistant "Noted: a quiet hotel in Alfama, to look for."
step memkit session add lisbon user "Also a day trip to Sintra by train, and one evening of fado in the old town"
echo "(the next day, a new process: find yesterday's conversation and carry on)"
step memkit session list
step memkit session load lisbon --tokens 60
step memkit search --sessions "which flight did I book"
step memkit session load lisbon --tokens 90 --strategy summary
step grep -A1 "^### summary" "$work"/vault/sessions/*-lisbon.md
step memkit session add lisbon user "Did you find a hotel?"
step memkit session export lisbon
echo; echo "--- memory that ages: the pinned profile, follow-ups, edits with history, expiry ---"
step memkit context "any idea what I could cook tonight?" --budget 450
step memkit add "Ask how the job interview at Acme went" --due "$(date +%F)" --topic work
echo "(tomorrow at 10:00, a day after the last conversation: a good moment to ask; the LLM drafts the line)"
step memkit proactive --at "$(date -d tomorrow '+%F 10:00')"
step memkit context "hi!" --session later --budget 700
step memkit pending
followup=$(memkit pending --json | python -c "import json,sys; print(json.load(sys.stdin)[0]['id'])")
step memkit done "$followup"
step memkit edit --match "Manager is Priya" "Manager is Tom Berg since Priya moved teams in November"
edited=$(memkit search "Tom Berg manager" -k 1 --json | python -c "import json,sys; print(json.load(sys.stdin)[0]['id'])")
step memkit history "$edited"
# a memory that ended yesterday, written by hand (memkit add refuses an --until in the past)
echo "- Parking spot at the office is B14 this week (until $(date -d yesterday +%F))" >> "$work/vault/topics/work.md"
step tail -n 1 "$work/vault/topics/work.md"
step memkit tidy --dry-run
step memkit tidy
step memkit stats
echo; echo "--- conversations that age: the Lisbon talk at day 3 (a summary) and day 7 (a core memory), on a faked clock ---"
step memkit session add lisbon user "I'm a bit nervous, honestly: my first trip alone since the move, and my Portuguese is rusty. But I'd love to see the tiles in the Museu do Azulejo and hear fado one evening."
step memkit session add lisbon assistant "That sounds lovely. Noted: the Museu do Azulejo and a fado evening in Alfama; the good fado houses take bookings a week ahead, I'll remind you."
step memkit session add lisbon user "Yes please. Somewhere small, with a terrace if possible, and not on a street with trams at night: I sleep badly with noise."
step memkit upkeep --at "$(date -d '+4 days' '+%F 00:00')"
step memkit session show lisbon
step memkit upkeep --at "$(date -d '+8 days' '+%F 00:00')"
step memkit session show lisbon
step memkit session list
step ls "$work/vault/sessions/archive/raw/"
step bash -c "grep -c '^### \\(user\\|assistant\\)' '$work'/vault/sessions/archive/raw/*-lisbon.md"
echo "(the raw conversation, every message, is kept: \`memkit session show lisbon --raw\`)"
echo; echo "--- git: two clones of the vault add at the same time, then merge by themselves ---"
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.com GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.com
g() { git -c init.defaultBranch=main -c pull.rebase=false -c advice.detachedHead=false "$@"; }
( cd "$work/vault" && g init -q && memkit git-setup && g add -A && g commit -qm "my memory" )
g clone -q "$work/vault" "$work/laptop"; g clone -q "$work/vault" "$work/phone"
memkit --vault "$work/laptop" git-setup >/dev/null
memkit --vault "$work/phone" git-setup >/dev/null
step memkit --vault "$work/laptop" add "Biscuit is afraid of thunderstorms" --topic pets
step memkit --vault "$work/phone" add "Biscuit's vet is Dr. Okafor at Riverside clinic" --topic pets
( cd "$work/laptop" && g commit -qam "laptop" && g push -q origin HEAD:refs/heads/laptop )
( cd "$work/phone" && g commit -qam "phone" )
step bash -c "cd '$work/phone' && git pull --no-rebase -q origin laptop && git log --oneline | head -3"
step tail -n 3 "$work/phone/topics/pets.md"
echo "(both new lines, no conflict; index.txt merged too)"
step memkit --vault "$work/phone" recent
echo; echo "--- a real conflict: the same line changed differently on each clone ---"
( cd "$work/laptop" && sed -i 's/Biscuit is afraid of thunderstorms/Biscuit is afraid of thunderstorms and fireworks/' topics/pets.md && g commit -qam "laptop edit" && g push -q origin HEAD:refs/heads/laptop )
( cd "$work/phone" && sed -i 's/Biscuit is afraid of thunderstorms/Biscuit hides under the bed in thunderstorms/' topics/pets.md && g commit -qam "phone edit" )
step bash -c "cd '$work/phone' && git pull --no-rebase -q origin laptop || true"
step memkit --vault "$work/phone" check || true
step memkit --vault "$work/phone" search "thunderstorms" -k 3
step memkit --vault "$work/phone" add "Biscuit likes carrots" --topic pets || true
echo; echo "--- MCP: an assistant (here the SDK's own stdio client) talks to \`memkit mcp\` ---"
step python bench/demo_mcp.py "$work/vault"
echo; echo "demo done (the copy in $work is removed on exit)"
