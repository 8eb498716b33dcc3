package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// dynamoNotes keeps each owner's notes in one item of the claims table,
// under the key prefix "notes#" (claims use "claim#"): a list attribute
// that an add appends to in one write. It needs only GetItem and
// UpdateItem, the actions the function already has on the table.
type dynamoNotes struct {
	aws   *awsClients
	table string
}

type noteItem struct {
	ID      string `dynamodbav:"id"`
	Text    string `dynamodbav:"text"`
	Created int64  `dynamodbav:"created"`
}

// notesKey names an owner's item by a digest: principals do not appear
// in keys.
func notesKey(owner string) map[string]types.AttributeValue {
	d := sha256.Sum256([]byte(owner))
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "notes#" + hex.EncodeToString(d[:])}}
}

func (d *dynamoNotes) client(ctx context.Context) (*dynamodb.Client, error) {
	if err := d.aws.load(ctx); err != nil {
		return nil, err
	}
	return d.aws.dynamo, nil
}

func (d *dynamoNotes) Add(ctx context.Context, owner, text string) (Note, error) {
	c, err := d.client(ctx)
	if err != nil {
		return Note{}, err
	}
	n := Note{ID: newNoteID(), Text: text, Created: time.Now().UTC()}
	item, err := attributevalue.MarshalList([]noteItem{{ID: n.ID, Text: n.Text, Created: n.Created.UnixMilli()}})
	if err != nil {
		return Note{}, err
	}
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &d.table,
		Key:                       notesKey(owner),
		UpdateExpression:          aws.String("SET notes = list_append(if_not_exists(notes, :empty), :new)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":empty": &types.AttributeValueMemberL{}, ":new": &types.AttributeValueMemberL{Value: item}},
	})
	if err != nil {
		return Note{}, fmt.Errorf("adding a note: %w", err)
	}
	return n, nil
}

func (d *dynamoNotes) List(ctx context.Context, owner string) ([]Note, error) {
	items, err := d.list(ctx, owner)
	if err != nil {
		return nil, err
	}
	notes := make([]Note, len(items))
	for i, it := range items {
		notes[i] = Note{ID: it.ID, Text: it.Text, Created: time.UnixMilli(it.Created).UTC()}
	}
	return notes, nil
}

func (d *dynamoNotes) list(ctx context.Context, owner string) ([]noteItem, error) {
	c, err := d.client(ctx)
	if err != nil {
		return nil, err
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &d.table, Key: notesKey(owner), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("reading notes: %w", err)
	}
	var doc struct {
		Notes []noteItem `dynamodbav:"notes"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &doc); err != nil {
		return nil, fmt.Errorf("decoding notes: %w", err)
	}
	return doc.Notes, nil
}

func (d *dynamoNotes) Get(ctx context.Context, owner, id string) (Note, error) {
	notes, err := d.List(ctx, owner)
	if err != nil {
		return Note{}, err
	}
	for _, n := range notes {
		if n.ID == id {
			return n, nil
		}
	}
	return Note{}, ErrNoNote
}

// Delete removes the note at its index, on condition that the index still
// holds it; a concurrent change makes it read and try again.
func (d *dynamoNotes) Delete(ctx context.Context, owner, id string) error {
	for attempt := 0; attempt < 5; attempt++ {
		items, err := d.list(ctx, owner)
		if err != nil {
			return err
		}
		i := -1
		for j, it := range items {
			if it.ID == id {
				i = j
			}
		}
		if i < 0 {
			return ErrNoNote
		}
		c, err := d.client(ctx)
		if err != nil {
			return err
		}
		_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 &d.table,
			Key:                       notesKey(owner),
			UpdateExpression:          aws.String(fmt.Sprintf("REMOVE notes[%d]", i)),
			ConditionExpression:       aws.String(fmt.Sprintf("notes[%d].id = :id", i)),
			ExpressionAttributeValues: map[string]types.AttributeValue{":id": &types.AttributeValueMemberS{Value: id}},
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			continue
		}
		if err != nil {
			return fmt.Errorf("deleting a note: %w", err)
		}
		return nil
	}
	return errors.New("deleting a note: the note book kept changing")
}
