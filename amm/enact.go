package amm

import "slices"

// Limits are the enactor's admission settings.
type Limits struct {
	// MaxFill bounds a node's store use, as a fraction of its capacity,
	// after a new copy: a replica that would pass it does not fit (the
	// store starts spilling at 0.8). Default DefaultMaxFill.
	MaxFill float64
}

// DefaultMaxFill is Limits.MaxFill's default: a new copy never pushes a
// store past the point where it starts spilling.
const DefaultMaxFill = 0.8

// Reasons a suggestion is refused or skipped (Decision.Refused keys).
const (
	// Stale: the object, the node or the copy is not (or no longer) as the
	// suggestion assumes: a drop of a copy that is not there, a replica
	// where one already is, an unknown node.
	ReasonStale = "stale"
	// ReasonPrimary: the copy is the object's primary.
	ReasonPrimary = "primary"
	// ReasonLastCopy: it is the last copy.
	ReasonLastCopy = "last-copy"
	// ReasonPinned, ReasonReading, ReasonPulling: the copy is in use.
	ReasonPinned  = "pinned"
	ReasonReading = "reading"
	ReasonPulling = "pulling"
	// ReasonNoFit: the target's store would pass Limits.MaxFill.
	ReasonNoFit = "no-fit"
	// ReasonRetiring: a new copy on a retiring node.
	ReasonRetiring = "retiring"
	// ReasonNoSource: no copy to pull from (every copy is being pulled).
	ReasonNoSource = "no-source"
)

// Decision is what the enactor does with one round of suggestions.
type Decision struct {
	// Drops, Replicas and Moves are the accepted suggestions, in order.
	// The enactor makes a move's replica with the other replicas, and
	// drops its From copy only once the replica was made.
	Drops, Replicas, Moves []Suggestion
	// Refused counts the suggestions not carried out, by reason.
	Refused map[string]int
}

// Decide settles one round of suggestions against the snapshot, in
// order, each seeing the effect of those accepted before it (so two
// policies cannot both drop the second-last copy). It never accepts the
// drop of an object's last copy or of its primary, nor of a copy pinned,
// being read or being pulled, nor a replica that would not fit (Limits)
// or goes to a retiring node; a move must satisfy both its replica's
// and its drop's conditions (its replica is the source's other copy). It
// does not modify the snapshot.
func Decide(s *Snapshot, suggestions []Suggestion, lim Limits) Decision {
	if lim.MaxFill <= 0 {
		lim.MaxFill = DefaultMaxFill
	}
	d := Decision{Refused: map[string]int{}}
	used := map[NodeID]uint64{}
	for id, n := range s.Nodes {
		used[id] = n.Used
	}
	// copies holds the copies as this round leaves them (accepted replicas
	// count as copies being pulled).
	copies := map[ObjectID][]Copy{}
	current := func(o *Object) []Copy {
		if c, ok := copies[o.ID]; ok {
			return c
		}
		return o.Copies
	}
	refuse := func(reason string) { d.Refused[reason]++ }
	for _, sg := range suggestions {
		o, node := s.Objects[sg.Object], s.Nodes[sg.Node]
		if o == nil || node == nil {
			refuse(ReasonStale)
			continue
		}
		cs := current(o)
		i := slices.IndexFunc(cs, func(c Copy) bool { return c.Node == sg.Node })
		switch sg.Action {
		case ActionDrop:
			if i < 0 {
				refuse(ReasonStale)
				continue
			}
			switch why := inUse(cs[i]); {
			case why != "":
				refuse(why)
			case !hasOtherSource(s, cs, sg.Node):
				refuse(ReasonLastCopy)
			default:
				copies[o.ID] = slices.Delete(slices.Clone(cs), i, i+1)
				used[sg.Node] -= min(used[sg.Node], o.Size)
				d.Drops = append(d.Drops, sg)
			}
		case ActionReplicate:
			switch {
			case i >= 0:
				refuse(ReasonStale)
			case node.Retiring:
				refuse(ReasonRetiring)
			case !hasOtherSource(s, cs, sg.Node):
				refuse(ReasonNoSource)
			case float64(used[sg.Node]+o.Size) > lim.MaxFill*float64(node.Capacity):
				refuse(ReasonNoFit)
			default:
				copies[o.ID] = append(slices.Clone(cs), Copy{Node: sg.Node, Pulling: true})
				used[sg.Node] += o.Size
				d.Replicas = append(d.Replicas, sg)
			}
		case ActionMove:
			j := slices.IndexFunc(cs, func(c Copy) bool { return c.Node == sg.From })
			if i >= 0 || j < 0 || s.Nodes[sg.From] == nil || sg.From == sg.Node {
				refuse(ReasonStale)
				continue
			}
			switch why := inUse(cs[j]); {
			case node.Retiring:
				refuse(ReasonRetiring)
			case why != "":
				refuse(why)
			case float64(used[sg.Node]+o.Size) > lim.MaxFill*float64(node.Capacity):
				refuse(ReasonNoFit)
			default:
				// As the round leaves it: a copy being pulled on Node, none
				// on From (the drop follows a successful pull; until then
				// the From copy is the source, so no other drop of this
				// round may count on it).
				next := slices.Delete(slices.Clone(cs), j, j+1)
				copies[o.ID] = append(next, Copy{Node: sg.Node, Pulling: true})
				used[sg.Node] += o.Size
				used[sg.From] -= min(used[sg.From], o.Size)
				d.Moves = append(d.Moves, sg)
			}
		default:
			refuse(ReasonStale)
		}
	}
	return d
}

// inUse is why a copy may not be dropped as such ("" if it may): it is
// the primary, pinned, being read or being pulled.
func inUse(c Copy) string {
	switch {
	case c.Primary:
		return ReasonPrimary
	case c.Pinned:
		return ReasonPinned
	case c.Reading:
		return ReasonReading
	case c.Pulling:
		return ReasonPulling
	}
	return ""
}

// hasOtherSource reports whether a copy other than the one on node is
// complete (not being pulled) on a node of the snapshot.
func hasOtherSource(s *Snapshot, cs []Copy, node NodeID) bool {
	for _, c := range cs {
		if c.Node != node && !c.Pulling && s.Nodes[c.Node] != nil {
			return true
		}
	}
	return false
}

// Run asks each policy for its suggestions, in order, and decides them
// all at once.
func Run(s *Snapshot, policies []Policy, lim Limits) Decision {
	var all []Suggestion
	for _, p := range policies {
		all = append(all, p.Suggest(s)...)
	}
	return Decide(s, all, lim)
}
