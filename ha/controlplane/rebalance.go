package controlplane

import (
	"sort"
	"strings"
)

// PlannedMove is one move of a rebalance plan.
type PlannedMove struct {
	Topic     string
	Partition int32
	From, To  string
	// Weight is what the partition adds to its group's load.
	Weight int64
}

// PlanRebalance plans moves that even out the load over groups, the
// replica groups that can take partitions (those with a leader). A
// partition's load is weight(topic, partition): 1 evens out partition
// counts, its bytes evens out bytes. It moves a partition from the most
// loaded group to the least loaded while that narrows the gap between
// them (the one nearest half the gap, which narrows it most, so few moves
// are planned), each partition at most once; every move lowers the sum of
// squared loads, so planning ends. Internal topics ("__" names, whose partitions hold the groups'
// offsets), partitions already moving and partitions of a group not in
// groups (it has no leader to copy from) stay where they are, though the
// last two count towards their groups' load.
func PlanRebalance(topics []Topic, groups []string, weight func(topic string, partition int32) int64) []PlannedMove {
	if len(groups) < 2 {
		return nil
	}
	load := make(map[string]int64, len(groups))
	for _, g := range groups {
		load[g] = 0
	}
	movable := make(map[string][]PlannedMove, len(groups))
	for _, t := range topics {
		if strings.HasPrefix(t.Name, "__") {
			continue
		}
		for p, g := range t.Groups {
			w := weight(t.Name, int32(p))
			mv, moving := t.Moves[int32(p)]
			if moving {
				g = mv.To
			}
			if _, ok := load[g]; !ok {
				continue
			}
			load[g] += w
			if !moving {
				movable[g] = append(movable[g], PlannedMove{Topic: t.Name, Partition: int32(p), From: g, Weight: w})
			}
		}
	}
	for _, ms := range movable {
		sort.Slice(ms, func(i, j int) bool {
			if ms[i].Weight != ms[j].Weight {
				return ms[i].Weight > ms[j].Weight
			}
			if ms[i].Topic != ms[j].Topic {
				return ms[i].Topic < ms[j].Topic
			}
			return ms[i].Partition < ms[j].Partition
		})
	}
	var plan []PlannedMove
	for {
		hi, lo := extremes(groups, load)
		gap := load[hi] - load[lo]
		i := closestToHalf(movable[hi], gap)
		if i < 0 {
			return plan
		}
		mv := movable[hi][i]
		movable[hi] = append(movable[hi][:i], movable[hi][i+1:]...)
		mv.To = lo
		load[hi] -= mv.Weight
		load[lo] += mv.Weight
		plan = append(plan, mv)
	}
}

// closestToHalf is the index of the move whose weight is nearest half the
// gap among those lighter than it, which narrows the gap most; -1 if none.
func closestToHalf(ms []PlannedMove, gap int64) int {
	best := -1
	for i, mv := range ms {
		if mv.Weight <= 0 || mv.Weight >= gap {
			continue
		}
		if best < 0 || abs(2*mv.Weight-gap) < abs(2*ms[best].Weight-gap) {
			best = i
		}
	}
	return best
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// extremes are the most and the least loaded groups, the first in groups'
// order on a tie.
func extremes(groups []string, load map[string]int64) (hi, lo string) {
	hi, lo = groups[0], groups[0]
	for _, g := range groups[1:] {
		if load[g] > load[hi] {
			hi = g
		}
		if load[g] < load[lo] {
			lo = g
		}
	}
	return hi, lo
}
