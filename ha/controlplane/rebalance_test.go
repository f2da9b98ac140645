package controlplane

import (
	"fmt"
	"reflect"
	"testing"
)

func TestPlanRebalance(t *testing.T) {
	one := func(string, int32) int64 { return 1 }
	sized := map[string]int64{"big/0": 100, "big/1": 10, "small/0": 1, "small/1": 1, "small/2": 1}
	bytes := func(topic string, p int32) int64 { return sized[fmt.Sprintf("%s/%d", topic, p)] }
	for _, tc := range []struct {
		name   string
		topics []Topic
		groups []string
		weight func(string, int32) int64
		want   []PlannedMove
	}{
		{"one group: nothing to even out", []Topic{{Name: "a", Groups: []string{"g1", "g1"}}}, []string{"g1"}, one, nil},
		{"already even", []Topic{{Name: "a", Groups: []string{"g1", "g2", "g1"}}}, []string{"g1", "g2"}, one, nil},
		{"a new empty group gets its share", []Topic{{Name: "a", Groups: []string{"g1", "g2", "g1", "g2", "g1", "g2"}}}, []string{"g1", "g2", "g3"}, one, []PlannedMove{
			{Topic: "a", Partition: 0, From: "g1", To: "g3", Weight: 1},
			{Topic: "a", Partition: 1, From: "g2", To: "g3", Weight: 1},
		}},
		{"internal topics and moving partitions stay", []Topic{
			{Name: "__consumer_offsets", Groups: []string{"g1", "g1", "g1", "g1"}},
			{Name: "a", Groups: []string{"g1", "g1", "g1", "g1"}, Moves: map[int32]Move{0: {To: "g2"}}},
		}, []string{"g1", "g2"}, one, []PlannedMove{
			{Topic: "a", Partition: 1, From: "g1", To: "g2", Weight: 1},
		}},
		{"a group without a leader is neither source nor target", []Topic{{Name: "a", Groups: []string{"gone", "gone", "g1", "g1"}}}, []string{"g1", "g2"}, one, []PlannedMove{
			{Topic: "a", Partition: 2, From: "g1", To: "g2", Weight: 1},
		}},
		{"by bytes: the one that narrows the gap most", []Topic{
			{Name: "big", Groups: []string{"g1", "g1"}},
			{Name: "small", Groups: []string{"g2", "g2", "g2"}},
		}, []string{"g1", "g2"}, bytes, []PlannedMove{
			{Topic: "big", Partition: 1, From: "g1", To: "g2", Weight: 10},
		}},
		{"by bytes: one partition heavier than the rest stays", []Topic{
			{Name: "big", Groups: []string{"g1"}},
		}, []string{"g1", "g2"}, bytes, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PlanRebalance(tc.topics, tc.groups, tc.weight); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
