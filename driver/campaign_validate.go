package driver

// MaxCampaignListed bounds the problems [CheckCampaign] lists by id (SQL
// campaign_check's max_listed).
const MaxCampaignListed = 100_000

// Validate checks the spec as [CreateCampaign] does before anything is
// sent: the name, the tenant, the chunk size and the queue window (0 is
// [DefaultQueueWindow]). The error is an [ErrInvalid] naming the field. It
// needs no database.
func (s CampaignSpec) Validate() error {
	_, err := s.check()
	return err
}

// CheckCampaignName returns an [ErrInvalid] naming "name" unless name is 1
// to 64 ASCII letters, digits, _ or -: the check every campaign operation
// makes first, for callers that want it before opening a connection.
func CheckCampaignName(name string) error { return checkName("name", name) }

// CheckUndoName returns an [ErrInvalid] naming undo_name unless name can
// name an undo campaign ([UndoCampaign]'s undoName, not empty): a name of
// at most [MaxCampaignNameLen] characters, as SQL campaign_undo checks it.
func CheckUndoName(name string) error {
	if err := checkName("undo_name", name); err != nil {
		return err
	}
	if len(name) > MaxCampaignNameLen {
		return Invalidf("undo_name: must be at most %d characters (job ids add -NNNNNN), got %d", MaxCampaignNameLen, len(name))
	}
	return nil
}

// CheckMaxListed returns an [ErrInvalid] naming max_listed unless n is 0 to
// [MaxCampaignListed], as SQL campaign_check checks it.
func CheckMaxListed(n int) error {
	if n < 0 || n > MaxCampaignListed {
		return Invalidf("max_listed: must be between 0 and %d, got %d", MaxCampaignListed, n)
	}
	return nil
}
