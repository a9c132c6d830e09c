#!/usr/bin/env bash
# The portal's Bookings page with curl (no browser): a week of one GPU class renders for a
# user; the booking form books (303 and the block in the calendar); another team sees the
# block without its owner's name and cannot cancel it; an overlapping booking is refused
# (409) with the conflict and free windows as links that fill the form, and the first of
# those books; a bad field is shown next to that field (422); the time zone moves the
# times shown; a cancel removes the booking; a POST without the CSRF token is refused.
# Queues: tests/portal/fixtures/queues.yaml (team-a and team-b, one h100 GPU each).
source "$(dirname "$0")/lib.sh"

cfg=$(write_config portal-calendar "$ROOT/examples/demo/node.yaml" "$ROOT/tests/portal/fixtures/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

page() { curl -s -b "$1" -c "$1" -w '\n%{http_code}' "$GPUAAS_SERVER$2"; }
# post JAR PATH FIELD=VALUE...: the status, then the Location header (or the body)
post() {
  local jar=$1 path=$2; shift 2
  local args=(--data-urlencode "_csrf=$(csrf_of_jar "$jar")")
  for f in "$@"; do args+=(--data-urlencode "$f"); done
  curl -s -b "$jar" -c "$jar" -D "$TMP/h" -o "$TMP/b" -w '%{http_code}' "${args[@]}" "$GPUAAS_SERVER$path"
  echo; grep -i '^location:' "$TMP/h" | tr -d '\r' | sed 's/^[Ll]ocation: //'; cat "$TMP/b"
}
has()   { if grep -qE -- "$3" <<<"$2"; then ok "$1"; else fail "$1: /$3/ is not in the page"; fi; }
hasnt() { if grep -qE -- "$3" <<<"$2"; then fail "$1: /$3/ is in the page"; else ok "$1"; fi; }

A=$(body_of "$(api POST /api/v1/users -d '{"name":"alice","namespaces":["team-a"]}')" | jq -r .token)
B=$(body_of "$(api POST /api/v1/users -d '{"name":"bob","namespaces":["team-b"]}')" | jq -r .token)
expect_eq "alice signs in" "$(sign_in "$TMP/a.jar" "$A")" 303
expect_eq "bob signs in" "$(sign_in "$TMP/b.jar" "$B")" 303

W=$(date -u -d "next monday + 14 days" +%F)      # a Monday two weeks ahead: every window is in the future
TUE=$(date -u -d "$W + 1 day" +%F)
r=$(page "$TMP/a.jar" "/ui/reservations?week=$TUE&class=h100&tz=UTC")
expect_eq "the Bookings page renders" "$(status_of "$r")" 200
has "the menu links it" "$r" 'href="/ui/reservations"[^>]*aria-current="page">Bookings'
has "a Tuesday shows its Monday's week" "$r" "data-date=\"$W\""
has "the time zone is shown" "$r" 'id="cal-tz">UTC<'
has "the class and its capacity are shown" "$r" 'id="cal-class">h100</strong>: 2 GPUs of capacity \(team-a 1, team-b 1\)'
has "free GPUs per hour" "$r" 'Mon 09:00: 2 of 2 GPUs free'
has "the booking form" "$r" 'id="book"'
has "previous week link" "$r" "id=\"prev-week\" href=\"/ui/reservations\\?week=$(date -u -d "$W - 7 days" +%F)"

out=$(post "$TMP/a.jar" /ui/reservations namespace=team-a name=morning clusterQueue=team-a class=h100 gpus=1 \
      "start=${W}T09:00" "end=${W}T12:00" tz=UTC)
expect_eq "alice books Monday 09:00-12:00 (303)" "$(head -1 <<<"$out")" 303
expect_match "back to the week with a notice" "$(sed -n 2p <<<"$out")" "week=$W.*booked=team-a%2Fmorning"
r=$(page "$TMP/a.jar" "/ui/reservations?week=$W&class=h100&tz=UTC&booked=team-a%2Fmorning")
has "the notice" "$r" 'Booked team-a/morning'
has "the block in the calendar, with its owner" "$r" 'class="blk ph-[A-Za-z]+" data-name="team-a/morning"'
has "the booking listed with its time" "$r" 'data-name="team-a/morning".*09:00 – [A-Za-z]+ [0-9]+ [A-Za-z]+ 12:00 · 1 GPU'
has "the booked hours have one GPU less" "$r" 'Mon 10:00: 1 of 2 GPUs free'
has "the hours before do not" "$r" 'Mon 08:00: 2 of 2 GPUs free'
has "alice may cancel her booking" "$r" 'action="/ui/reservations/team-a/morning/cancel"'

r=$(page "$TMP/b.jar" "/ui/reservations?week=$W&class=h100&tz=UTC")
has "bob sees the block" "$r" 'class="blk ph-[A-Za-z]+" data-name=""'
has "as another team's booking" "$r" "another team&#39;s booking"
hasnt "without its owner's name" "$r" 'morning'
hasnt "and without a cancel" "$r" '/cancel"'
out=$(post "$TMP/b.jar" /ui/reservations/team-a/morning/cancel "week=$W")
expect_eq "bob cannot cancel it (403)" "$(head -1 <<<"$out")" 403

r=$(page "$TMP/a.jar" "/ui/reservations?week=$W&class=h100&tz=Europe/Paris")
has "in Paris the booking starts at 10:00" "$r" 'data-name="team-a/morning".*10:00 – [A-Za-z]+ [0-9]+ [A-Za-z]+ 13:00'
has "the zone is named" "$r" 'id="cal-tz">Europe/Paris<'
r=$(page "$TMP/a.jar" "/ui/reservations?week=$W&class=h100")
has "the zone is remembered (cookie)" "$r" 'id="cal-tz">Europe/Paris<'
r=$(page "$TMP/a.jar" "/ui/reservations?week=$W&class=h100&tz=Mars/Olympus")
has "an unknown zone: the remembered one" "$r" 'id="cal-tz">Europe/Paris<'
sed 's#gx_tz\tEurope/Paris#gx_tz\tMars/Olympus#' "$TMP/a.jar" > "$TMP/a2.jar"
r=$(page "$TMP/a2.jar" "/ui/reservations?week=$W&class=h100")
has "no usable zone: UTC" "$r" 'id="cal-tz">UTC<'

out=$(post "$TMP/a.jar" /ui/reservations namespace=team-a name=overlap clusterQueue=team-a class=h100 gpus=1 \
      "start=${W}T10:00" "end=${W}T11:00" tz=UTC)
expect_eq "an overlapping booking is refused (409)" "$(head -1 <<<"$out")" 409
has "the conflict is shown" "$out" 'id="conflicts".*team-a/morning'
has "with free windows as links" "$out" 'id="alternatives"><li><a class="button alt" href="/ui/reservations\?'
has "the refusal shows the week asked for" "$out" "data-date=\"$W\""
has "a free window is said in words" "$out" 'class="button alt" href="[^"]*">Use [A-Z][a-z]{2} [0-9]{2} [A-Z][a-z]{2} [0-9]{2}:[0-9]{2} – '
href=$(grep -o 'class="button alt" href="[^"]*"' <<<"$out" | head -1 | sed 's/.*href="//; s/"$//; s/&amp;/\&/g')
r=$(page "$TMP/a.jar" "$href")
s=$(grep -o 'id="f-start" name="start" value="[^"]*"' <<<"$r" | sed 's/.*value="//; s/"$//')
e=$(grep -o 'id="f-end" name="end" value="[^"]*"' <<<"$r" | sed 's/.*value="//; s/"$//')
expect_match "the link fills the form's start" "$s" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}$'
tz=$(grep -o 'id="f-tz" name="tz" value="[^"]*"' <<<"$r" | sed 's/.*value="//; s/"$//')
expect_eq "the refusal answers in the form's zone (not the remembered Paris)" "$tz" UTC
has "and the class" "$r" '<option selected>h100</option>'
out=$(post "$TMP/a.jar" /ui/reservations namespace=team-a name=overlap clusterQueue=team-a class=h100 gpus=1 \
      "start=$s" "end=$e" "tz=$tz")
expect_eq "the free window books (303)" "$(head -1 <<<"$out")" 303

out=$(post "$TMP/a.jar" /ui/reservations namespace=team-a clusterQueue=team-a class=h100 gpus=0 \
      "start=${W}T14:00" "end=${W}T15:00" tz=UTC)
expect_eq "zero GPUs: 422" "$(head -1 <<<"$out")" 422
has "the error next to the GPUs field" "$out" 'id="f-gpus"[^>]*><p class="help" id="h-gpus"></p><p class="field-error"'
out=$(post "$TMP/a.jar" /ui/reservations namespace=team-a clusterQueue=team-a class=h100 gpus=1 \
      "start=tomorrow" "end=${W}T15:00" tz=UTC)
expect_eq "a start that is no time: 422" "$(head -1 <<<"$out")" 422
has "the error next to the start field" "$out" 'id="h-start">[^<]*</p><p class="field-error" role="alert">a date and time'
out=$(post "$TMP/a.jar" /ui/reservations namespace=team-a clusterQueue=team-a class=h100 gpus=1 \
      "start=${W}T14:00" "end=${W}T15:00" tz=Mars/Olympus)
expect_eq "an unknown zone in the form: 422" "$(head -1 <<<"$out")" 422
has "the error next to the zone field" "$out" 'id="h-tz">[^<]*</p><p class="field-error" role="alert">unknown time zone'

many=(); for i in $(seq 1 40); do many+=("weekly=Wed"); done
out=$(post "$TMP/a.jar" /ui/reservations namespace=team-a clusterQueue=team-a class=h100 gpus=0 \
      "start=${W}T14:00" "end=${W}T15:00" tz=UTC "${many[@]}")
expect_eq "a form repeating the weekly days 40 times is answered (422, the GPUs)" "$(head -1 <<<"$out")" 422
has "its days stay ticked" "$out" 'value="Wed" checked'
out=$(post "$TMP/a.jar" /ui/reservations namespace=team-a name=weekly clusterQueue=team-a class=h100 gpus=1 \
      "start=${W}T18:00" "end=${W}T19:00" tz=Europe/Paris weekly=Mon weekly=Thu)
expect_eq "a weekly booking in Paris (303)" "$(head -1 <<<"$out")" 303
r=$(page "$TMP/a.jar" "/ui/reservations?week=$W&class=h100&tz=Europe/Paris")
has "it is listed as weekly, at its Paris time" "$r" 'data-name="team-a/weekly"[^<]*<span[^>]*>[A-Za-z]+</span> [A-Z][a-z]{2} [0-9]{2} [A-Z][a-z]{2} 18:00 – [^<]*weekly'
code=$(curl -s -o /dev/null -w '%{http_code}' -b "$TMP/a.jar" --data "namespace=team-a" "$GPUAAS_SERVER/ui/reservations")
expect_eq "a booking without the CSRF token is refused (403)" "$code" 403

out=$(post "$TMP/a.jar" /ui/reservations/team-a/morning/cancel "week=$W")
expect_eq "alice cancels (303)" "$(head -1 <<<"$out")" 303
r=$(page "$TMP/a.jar" "/ui/reservations?week=$W&class=h100&tz=UTC")
hasnt "the cancelled booking is gone" "$r" 'data-name="team-a/morning"'
has "the other one stays" "$r" 'data-name="team-a/overlap"'

stop_daemon
check "no sanitizer report from the daemon" bash -c "! grep -qE 'Sanitizer|runtime error' '$TMP/serve.log'"
finish
