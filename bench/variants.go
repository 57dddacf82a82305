package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Variants (-variants): named flag combinations of this commit's Redcell,
// each run as one more server right after Redcell (and Redcell-baseline),
// so that one run shows whether the defaults are as good as the best
// combination on this machine, minute for minute: a default within noise
// of every variant is a default worth keeping.

// variant is one named flag combination.
type variant struct {
	name  string
	flags []string
}

// kind is the variant's server kind, as rows name it: Redcell[name].
func (v variant) kind() serverKind { return serverKind(string(kindRedcell) + "[" + v.name + "]") }

// benchOwnFlags are the flags bench gives every Redcell itself; a variant
// may not change them.
var benchOwnFlags = []string{"--bind", "--port", "--data-dir"}

// parseVariants reads -variants: "name=flags;name=flags", the flags
// separated by spaces (no quoting: a variant's values are plain words).
func parseVariants(s string) ([]variant, error) {
	var vs []variant
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, flags, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("-variants: %q is not name=flags", part)
		}
		if strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-_.") != "" {
			return nil, fmt.Errorf("-variants: name %q: use letters, digits and + - _ . only", name)
		}
		v := variant{name: name, flags: strings.Fields(flags)}
		if len(v.flags) == 0 {
			return nil, fmt.Errorf("-variants: %s has no flags (Redcell with its defaults runs anyway)", name)
		}
		if !strings.HasPrefix(v.flags[0], "-") {
			return nil, fmt.Errorf("-variants: %s: %q is not a flag", name, v.flags[0])
		}
		for _, fl := range v.flags {
			if !strings.HasPrefix(fl, "-") {
				continue // a value
			}
			flagName, _, _ := strings.Cut(strings.TrimLeft(fl, "-"), "=")
			if slices.Contains(benchOwnFlags, "--"+flagName) {
				return nil, fmt.Errorf("-variants: %s: --%s is bench's to set", name, flagName)
			}
		}
		if slices.ContainsFunc(vs, func(o variant) bool { return o.name == name }) {
			return nil, fmt.Errorf("-variants: %s named twice", name)
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return nil, errors.New("-variants: no variant given")
	}
	return vs, nil
}

// variantsNote lists the variants for the results file's header.
func variantsNote(vs []variant) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%s: `%s`", v.kind(), strings.Join(v.flags, " "))
	}
	return strings.Join(parts, "; ") + " (this commit's binary, Redcell's defaults otherwise)"
}

// variantWithin is how close the default must be to the best combination
// for the table to call it good enough.
const variantWithin = 0.05

// variantsMarkdown is the table "Redcell (default flags) beside each
// variant" of rows: per scenario, the default's figure and each variant's,
// with the variant's ratio to the default, CPU µs per request of each, and
// whether the default is within 5 % of the best. Rates count as better
// higher, bytes per key (the memory rows) lower. "" when rows hold no
// variant.
func variantsMarkdown(rows []summaryRow, variants []serverKind) string {
	if len(variants) == 0 {
		return ""
	}
	type group struct {
		scenario string
		byKind   map[serverKind]summaryRow
	}
	var rateGroups, memGroups []*group
	find := func(gs *[]*group, scenario string) *group {
		for _, g := range *gs {
			if g.scenario == scenario {
				return g
			}
		}
		g := &group{scenario: scenario, byKind: make(map[serverKind]summaryRow)}
		*gs = append(*gs, g)
		return g
	}
	for _, r := range rows {
		if r.kind != kindRedcell && !slices.Contains(variants, r.kind) {
			continue
		}
		switch {
		case r.rate > 0:
			find(&rateGroups, r.scenario).byKind[r.kind] = r
		case r.bytesPerKey > 0:
			find(&memGroups, r.scenario).byKind[r.kind] = r
		}
	}
	hasVariant := func(gs []*group) bool {
		for _, g := range gs {
			if _, ok := g.byKind[kindRedcell]; !ok {
				continue
			}
			for _, v := range variants {
				if _, ok := g.byKind[v]; ok {
					return true
				}
			}
		}
		return false
	}
	var b strings.Builder
	if hasVariant(rateGroups) {
		b.WriteString("| scenario | Redcell rps")
		for _, v := range variants {
			fmt.Fprintf(&b, " | %s rps | ÷ Redcell", v)
		}
		b.WriteString(" | Redcell CPU µs/req")
		for _, v := range variants {
			fmt.Fprintf(&b, " | %s CPU µs/req", v)
		}
		b.WriteString(" | default within 5 % of the best |\n|---|---:")
		b.WriteString(strings.Repeat("|---:|---:", len(variants)))
		b.WriteString("|---:" + strings.Repeat("|---:", len(variants)) + "|---|\n")
		for _, g := range rateGroups {
			def, ok := g.byKind[kindRedcell]
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s", g.scenario, formatRPS(def.rate))
			for _, v := range variants {
				if r, ok := g.byKind[v]; ok {
					fmt.Fprintf(&b, " | %s | %s", formatRPS(r.rate), formatRatio(r.rate/def.rate))
				} else {
					b.WriteString(" | - | -")
				}
			}
			fmt.Fprintf(&b, " | %s", formatCPU(def.cpuUs))
			for _, v := range variants {
				fmt.Fprintf(&b, " | %s", formatCPU(g.byKind[v].cpuUs))
			}
			fmt.Fprintf(&b, " | %s |\n", bestVerdict(g.byKind, variants, func(r summaryRow) float64 { return r.rate }, true))
		}
		b.WriteString("\n*÷ Redcell*: the variant's rps over the default's, in the same run (medians over the rounds). " +
			"In the libraries and datatypes modes a request is a decision. *default within 5 % of the best*: whether no variant beat Redcell's defaults by more than 5 %; otherwise the best variant and its ratio.\n")
	}
	if hasVariant(memGroups) {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("| keys | Redcell bytes/key")
		for _, v := range variants {
			fmt.Fprintf(&b, " | %s bytes/key | ÷ Redcell", v)
		}
		b.WriteString(" | default within 5 % of the best |\n|---|---:" + strings.Repeat("|---:|---:", len(variants)) + "|---|\n")
		for _, g := range memGroups {
			def, ok := g.byKind[kindRedcell]
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "| %s | %.0f", g.scenario, def.bytesPerKey)
			for _, v := range variants {
				if r, ok := g.byKind[v]; ok {
					fmt.Fprintf(&b, " | %.0f | %s", r.bytesPerKey, formatRatio(r.bytesPerKey/def.bytesPerKey))
				} else {
					b.WriteString(" | - | -")
				}
			}
			fmt.Fprintf(&b, " | %s |\n", bestVerdict(g.byKind, variants, func(r summaryRow) float64 { return r.bytesPerKey }, false))
		}
		b.WriteString("\n*bytes/key*: fewer is better; *÷ Redcell*: the variant's over the default's.\n")
	}
	return b.String()
}

// bestVerdict says whether the default (byKind[kindRedcell]) is within
// variantWithin of the best of the variants by figure (higher better when
// higher): "yes", "yes (best: V, 1.03x)" when a variant is ahead by less,
// "no: V 1.12x" when one is ahead by more.
func bestVerdict(byKind map[serverKind]summaryRow, variants []serverKind, figure func(summaryRow) float64, higher bool) string {
	def := figure(byKind[kindRedcell])
	best, bestKind := def, kindRedcell
	for _, v := range variants {
		r, ok := byKind[v]
		if !ok || figure(r) <= 0 {
			continue
		}
		if f := figure(r); (higher && f > best) || (!higher && f < best) {
			best, bestKind = f, v
		}
	}
	if bestKind == kindRedcell || def <= 0 {
		return "yes"
	}
	ratio := best / def
	within := ratio <= 1+variantWithin
	if !higher {
		within = ratio >= 1-variantWithin
	}
	if within {
		return fmt.Sprintf("yes (best: %s, %s)", bestKind, formatRatio(ratio))
	}
	return fmt.Sprintf("**no**: %s %s", bestKind, formatRatio(ratio))
}

// formatCPU prints CPU µs per request, "-" when unknown.
func formatCPU(us float64) string {
	if us <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", us)
}

// withVariants appends the variants' table to a mode's markdown md, and
// prints it, when variants ran among rows; otherwise it returns md as is.
func withVariants(w io.Writer, md string, rows []summaryRow, variants []serverKind) string {
	vt := variantsMarkdown(rows, variants)
	if vt == "" {
		return md
	}
	fmt.Fprintf(w, "\nRedcell (default flags) beside each variant:\n%s", vt)
	return md + "\n**Redcell (default flags) beside each variant**\n\n" + vt
}
